#include "input_stream.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstring>
#include <stdexcept>
#include <system_error>

#include "core/op_error.hpp"
#include "read_ahead.hpp"
#include "tapeflow/config.hpp"
#include "tapeflow/core/error.hpp"

namespace tapeflow::io {

Compression parse_compression(const std::string& type, const char* op) {
  if (type.empty() || type == "NONE") return Compression::kNone;
  if (type == "GZIP") return Compression::kGzip;
  if (type == "ZLIB") return Compression::kZlib;
  throw op_error<ValueError>(
      op, "expected compression \"\", \"GZIP\" or \"ZLIB\", got \"", type,
      "\"");
}

namespace detail {

namespace {
constexpr size_t kBufferBytes = size_t{1} << 18;
constexpr size_t kMinBufferBytes = size_t{1} << 12;
// Four chunks (1 MiB): one parsed, one being read, two of slack, so that
// either side sleeps and wakes once per two chunks, not at every one.
constexpr size_t kReadAheadChunks = 4;
// Below this a thread's start (tens of microseconds) costs what it saves.
constexpr size_t kReadAheadMinFile = 4 * kBufferBytes;

// Read-ahead threads alive in the process. kAuto starts one only while
// they number fewer than the cores kernels may use, less the caller's: an
// interleave over many files gains nothing from more threads than cores.
std::atomic<int> g_read_aheads{0};

bool reserve_read_ahead(int cap) {
  int n = g_read_aheads.load();
  while (n < cap)
    if (g_read_aheads.compare_exchange_weak(n, n + 1)) return true;
  return false;
}

// Regular files only: a pipe's read may block forever, and the destructor
// joins the thread. True: a read-ahead thread is reserved.
bool reserve_read_ahead(ReadAheadMode mode, const struct stat& st) {
  if (mode == ReadAheadMode::kOff || !S_ISREG(st.st_mode)) return false;
  if (mode == ReadAheadMode::kOn) return reserve_read_ahead(INT_MAX);
  return static_cast<uint64_t>(st.st_size) >= kReadAheadMinFile &&
         reserve_read_ahead(config::intra_op_threads() - 1);
}
}  // namespace

InputStream::InputStream(std::string path, Compression compression,
                         const char* op, ReadAheadMode read_ahead)
    : path_(std::move(path)), op_(op), compression_(compression) {
  fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0)
    throw op_error<IOError>(op_, "expected a readable file, got ", path_, ": ",
                            std::strerror(errno));
  ::posix_fadvise(fd_, 0, 0, POSIX_FADV_SEQUENTIAL);
  // A small file gets a buffer of its size: a dataset may hold many small
  // shards open at once, and a fresh 256 KiB costs page faults each time.
  size_t file_buffer = kBufferBytes;
  struct stat st {};
  const bool stat_ok = ::fstat(fd_, &st) == 0;
  if (stat_ok && S_ISREG(st.st_mode))
    file_buffer = std::clamp(static_cast<size_t>(st.st_size), kMinBufferBytes,
                             kBufferBytes);
  // The constructor's own cleanup: no destructor runs when it throws.
  try {
    if (compression_ != Compression::kNone) {
      // 15 + 16: a gzip header and trailer around the deflate data.
      const int window = compression_ == Compression::kGzip ? 15 + 16 : 15;
      if (inflateInit2(&zs_, window) != Z_OK)
        throw op_error<IOError>(op_, "zlib failed to start for ", path_);
      zs_open_ = true;
    }
    if (stat_ok && reserve_read_ahead(read_ahead, st)) start_read_ahead();
    // The file's bytes land in buf_ unless a chunk of the read-ahead holds
    // them; compressed ones in packed_ (or a chunk), inflated into buf_.
    const bool compressed = compression_ != Compression::kNone;
    if (compressed || !ahead_) buf_ = AlignedBuffer(file_buffer);
    if (compressed && !ahead_) packed_ = AlignedBuffer(file_buffer);
  } catch (...) {
    ahead_.reset();  // before fd_ closes: its thread reads it
    release_read_ahead();
    if (zs_open_) inflateEnd(&zs_);
    ::close(fd_);
    throw;
  }
}

void InputStream::release_read_ahead() {
  if (!holds_read_ahead_) return;
  holds_read_ahead_ = false;
  --g_read_aheads;
}

void InputStream::start_read_ahead() {
  holds_read_ahead_ = true;
  try {
    ahead_ = std::make_unique<ReadAhead>(
        [this](unsigned char* dst, size_t n) { return read_file(dst, n); },
        kBufferBytes, kReadAheadChunks);
    ahead_pid_ = ::getpid();
  } catch (const std::system_error&) {
    // No thread to be had: read on the caller's, as without read-ahead.
  } catch (...) {
    release_read_ahead();
    throw;
  }
  if (!ahead_) release_read_ahead();
}

InputStream::~InputStream() {
  // Its thread reads fd_: it ends first. A forked child has no such thread
  // to join (joining would wait forever), and leaves the memory be.
  if (ahead_ && ::getpid() != ahead_pid_) (void)ahead_.release();
  ahead_.reset();
  release_read_ahead();
  if (zs_open_) inflateEnd(&zs_);
  if (fd_ >= 0) ::close(fd_);
}

void InputStream::fail(const std::string& expected_got,
                       uint64_t at_offset) const {
  const DataLossError error = op_error<DataLossError>(
      op_, "expected ", expected_got, " in ", path_, " at byte ", at_offset);
  failure_ = error.what();
  throw error;
}

void InputStream::throw_if_failed() const {
  // Reading on would start inside the bad record: what came next would be
  // garbage, or a clean end that hides the loss.
  if (!failure_.empty()) throw DataLossError(failure_);
}

void InputStream::overrun(size_t n) const {
  throw std::logic_error("[" + std::string(op_) + "] consumed " +
                         std::to_string(n) + " bytes with " +
                         std::to_string(buf_end_ - buf_pos_) + " buffered");
}

size_t InputStream::read_file(unsigned char* dst, size_t n) const {
  size_t done = 0;
  while (done < n) {
    const ssize_t r = ::read(fd_, dst + done, n - done);
    if (r < 0) {
      if (errno == EINTR) continue;
      throw op_error<IOError>(op_, "expected readable data, got ",
                              std::strerror(errno), " in ", path_);
    }
    if (r == 0) break;
    done += static_cast<size_t>(r);
  }
  return done;
}

std::span<const unsigned char> InputStream::read_chunk(
    const AlignedBuffer& dst) {
  if (!ahead_) return {dst.data(), read_file(dst.data(), dst.size())};
  // A forked child has no read-ahead thread: it would wait forever.
  if (::getpid() != ahead_pid_)
    throw op_error<IOError>(op_, "expected the process that opened ", path_,
                            " (pid ", ahead_pid_, "), got a forked child (pid ",
                            ::getpid(), "): open the file again there");
  const std::span<const unsigned char> chunk = ahead_->next();
  // Its thread ended (the end, an error, or it did not pay): another
  // stream may take one.
  if (!ahead_->reads_ahead()) release_read_ahead();
  return chunk;
}

bool InputStream::fill() {
  buf_pos_ = buf_end_ = 0;
  if (compression_ == Compression::kNone) {
    const std::span<const unsigned char> chunk = read_chunk(buf_);
    view_ = chunk.data();
    buf_end_ = chunk.size();
    return buf_end_ > 0;
  }
  view_ = buf_.data();
  zs_.next_out = buf_.data();
  zs_.avail_out = static_cast<uInt>(buf_.size());
  while (zs_.avail_out == buf_.size()) {
    if (zs_.avail_in == 0 && !file_ended_) {
      const std::span<const unsigned char> chunk = read_chunk(packed_);
      file_ended_ = chunk.empty();
      // zlib only reads through next_in (it is z_const under ZLIB_CONST).
      zs_.next_in = const_cast<unsigned char*>(chunk.data());
      zs_.avail_in = static_cast<uInt>(chunk.size());
    }
    // An empty file holds no data, as Python's gzip and TensorFlow read it.
    if (file_ended_ && zs_.avail_in == 0 && zs_.total_in == 0) break;
    if (stream_ended_) {
      // Concatenated gzip members (what `cat a.gz b.gz` makes) continue the
      // data; anything else after the end of a zlib stream is an error.
      if (zs_.avail_in == 0) break;
      if (compression_ != Compression::kGzip)
        fail("the end of the ZLIB stream, got trailing bytes", offset_);
      inflateReset(&zs_);
      stream_ended_ = false;
    }
    const int rc = inflate(&zs_, Z_NO_FLUSH);
    if (rc == Z_STREAM_END) {
      stream_ended_ = true;
    } else if (rc == Z_BUF_ERROR && zs_.avail_in == 0 && file_ended_) {
      fail("complete compressed data, got a truncated stream", offset_);
    } else if (rc != Z_OK && rc != Z_BUF_ERROR) {
      fail(std::string("valid compressed data, got \"") +
               (zs_.msg ? zs_.msg : "inflate error") + "\"",
           offset_);
    }
  }
  buf_end_ = buf_.size() - zs_.avail_out;
  return buf_end_ > 0;
}

size_t InputStream::read(void* dst, size_t n) {
  throw_if_failed();
  auto* out = static_cast<unsigned char*>(dst);
  size_t done = 0;
  while (done < n) {
    if (buf_pos_ == buf_end_) {
      // Large plain reads skip the copy through the buffer.
      if (compression_ == Compression::kNone && !ahead_ &&
          n - done >= buf_.size()) {
        const size_t got = read_file(out + done, n - done);
        done += got;
        offset_ += got;
        break;
      }
      if (!fill()) break;
    }
    const size_t take = std::min(n - done, buf_end_ - buf_pos_);
    std::memcpy(out + done, view_ + buf_pos_, take);
    buf_pos_ += take;
    done += take;
    offset_ += take;
  }
  return done;
}

bool InputStream::read_exact(void* dst, size_t n, const char* what) {
  const uint64_t start = offset_;
  const size_t got = read(dst, n);
  if (got == n) return true;
  if (got == 0) return false;
  fail(std::to_string(n) + " bytes of " + what + ", got " +
           std::to_string(got) + " (truncated " + what + ")",
       start);
}

size_t InputStream::skip(size_t n) {
  throw_if_failed();
  size_t done = 0;
  while (done < n) {
    if (buf_pos_ == buf_end_ && !fill()) break;
    const size_t take = std::min(n - done, buf_end_ - buf_pos_);
    buf_pos_ += take;
    done += take;
    offset_ += take;
  }
  return done;
}

bool InputStream::read_line(std::string& line) {
  throw_if_failed();
  line.clear();
  bool any = false;
  for (;;) {
    if (buf_pos_ == buf_end_ && !fill()) break;
    any = true;
    const unsigned char* begin = view_ + buf_pos_;
    const size_t avail = buf_end_ - buf_pos_;
    const auto* nl =
        static_cast<const unsigned char*>(std::memchr(begin, '\n', avail));
    const size_t take = nl ? static_cast<size_t>(nl - begin) : avail;
    line.append(reinterpret_cast<const char*>(begin), take);
    const size_t consumed = take + (nl ? 1 : 0);
    buf_pos_ += consumed;
    offset_ += consumed;
    if (nl) break;
  }
  if (!line.empty() && line.back() == '\r') line.pop_back();
  return any;
}

}  // namespace detail
}  // namespace tapeflow::io
