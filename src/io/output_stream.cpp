#include "output_stream.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "core/op_error.hpp"
#include "tapeflow/core/error.hpp"

namespace tapeflow::io::detail {

namespace {
constexpr size_t kBufferBytes = size_t{1} << 18;
}

OutputStream::OutputStream(std::string path, Compression compression,
                           const char* op)
    : path_(std::move(path)), op_(op), compression_(compression) {
  if (compression_ != Compression::kNone) {
    // 15 + 16: a gzip header and trailer around the deflate data.
    const int window = compression_ == Compression::kGzip ? 15 + 16 : 15;
    if (deflateInit2(&zs_, Z_DEFAULT_COMPRESSION, Z_DEFLATED, window, 8,
                     Z_DEFAULT_STRATEGY) != Z_OK)
      throw op_error<IOError>(op_, "zlib failed to start for ", path_);
    zs_open_ = true;
    packed_.resize(kBufferBytes);
  }
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (fd_ < 0) {
    const int err = errno;
    if (zs_open_) deflateEnd(&zs_);
    throw op_error<IOError>(op_, "expected a writable file, got ", path_, ": ",
                            std::strerror(err));
  }
  buf_.resize(kBufferBytes);
}

OutputStream::~OutputStream() {
  if (zs_open_) deflateEnd(&zs_);
  if (fd_ >= 0) ::close(fd_);
}

void OutputStream::check_open() const {
  if (fd_ < 0)
    throw op_error<IOError>(op_, "expected an open file, got ", path_,
                            " already closed");
  if (!failure_.empty())
    throw op_error<IOError>(op_, "expected a file whose writes succeeded, got ",
                            path_, " after a failed one (", failure_,
                            "): what came next would follow a partial record");
}

void OutputStream::fail(const std::string& why) {
  failure_ = why;
  throw op_error<IOError>(op_, "expected to write ", path_, ", got ", why);
}

void OutputStream::write_file(const unsigned char* data, size_t n) {
  while (n > 0) {
    const ssize_t w = ::write(fd_, data, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      fail(std::strerror(errno));
    }
    data += w;
    n -= static_cast<size_t>(w);
  }
}

void OutputStream::drain(int zflush) {
  if (compression_ == Compression::kNone) {
    write_file(buf_.data(), used_);
    used_ = 0;
    return;
  }
  zs_.next_in = buf_.data();
  zs_.avail_in = static_cast<uInt>(used_);
  int rc = Z_OK;
  // zlib's contract: call again while it fills the whole output buffer;
  // Z_FINISH is done only at Z_STREAM_END.
  do {
    zs_.next_out = packed_.data();
    zs_.avail_out = static_cast<uInt>(packed_.size());
    rc = deflate(&zs_, zflush);
    if (rc == Z_STREAM_ERROR) fail("zlib failed to compress");
    write_file(packed_.data(), packed_.size() - zs_.avail_out);
  } while (zs_.avail_out == 0 || (zflush == Z_FINISH && rc != Z_STREAM_END));
  used_ = 0;
}

void OutputStream::write(const void* data, size_t n) {
  check_open();
  const auto* p = static_cast<const unsigned char*>(data);
  while (n > 0) {
    if (used_ == buf_.size()) drain(Z_NO_FLUSH);
    const size_t take = std::min(n, buf_.size() - used_);
    std::memcpy(buf_.data() + used_, p, take);
    used_ += take;
    p += take;
    n -= take;
  }
}

void OutputStream::flush() {
  check_open();
  drain(compression_ == Compression::kNone ? Z_NO_FLUSH : Z_SYNC_FLUSH);
}

void OutputStream::close() {
  if (fd_ < 0) return;
  const int fd = fd_;
  try {
    check_open();  // a failed stream is closed as it is, and says so
    drain(Z_FINISH);
  } catch (...) {
    ::close(fd);
    fd_ = -1;
    throw;
  }
  fd_ = -1;
  if (::close(fd) != 0)
    throw op_error<IOError>(op_, "expected to close ", path_, ", got ",
                            std::strerror(errno));
}

}  // namespace tapeflow::io::detail
