#pragma once
// Buffered sequential reading of plain, GZIP or ZLIB files, shared by the
// record readers (text lines, fixed-length records, TFRecord) so that every
// one of them reports errors the same way: op, file and byte offset.
#include <sys/types.h>
#include <zlib.h>

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "aligned_buffer.hpp"
#include "tapeflow/io/compression.hpp"

namespace tapeflow::io::detail {

class ReadAhead;

/**
 * Whether a plain or compressed file is read on a thread of its own, a few
 * 256 KiB buffers ahead (ReadAhead). kAuto: for regular files of 1 MiB and
 * more while the process's read-ahead threads number fewer than
 * config::intra_op_threads() - 1 (the cores other processes leave free,
 * less the caller's). kOn: any regular file.
 */
enum class ReadAheadMode { kAuto, kOff, kOn };

class InputStream {
 public:
  /** Opens `path`; a missing or unreadable file is an IOError naming `op`. */
  InputStream(std::string path, Compression compression, const char* op,
              ReadAheadMode read_ahead = ReadAheadMode::kAuto);
  ~InputStream();
  InputStream(const InputStream&) = delete;
  InputStream& operator=(const InputStream&) = delete;

  /** Reads up to n bytes; fewer only at the end of the data. */
  size_t read(void* dst, size_t n);

  /**
   * Reads exactly n bytes. Returns false when the data ended before the
   * first byte; ending after some of them is a DataLossError ("truncated
   * <what>") at the offset where `what` began.
   */
  bool read_exact(void* dst, size_t n, const char* what);

  /**
   * The buffered data not yet consumed, in place: it may be empty or end
   * anywhere (at the end of the buffer, not of a record). Valid until the
   * next call that reads, skips or consumes. A reader whose next item lies
   * wholly inside it can parse it there instead of copying it out.
   */
  std::span<const unsigned char> peek() const {
    return {view_ + buf_pos_, buf_end_ - buf_pos_};
  }

  /** Consumes the first n bytes of peek(); more is a std::logic_error. */
  void consume(size_t n) {
    if (n > buf_end_ - buf_pos_) overrun(n);
    buf_pos_ += n;
    offset_ += n;
  }

  /** Skips n bytes; returns how many were there to skip. */
  size_t skip(size_t n);

  /**
   * Reads one line without its "\n" (and without a "\r" before it). Returns
   * false at the end of the data; a last line without "\n" is still a line.
   */
  bool read_line(std::string& line);

  /** Whether a thread reads ahead (ReadAheadMode). */
  bool reads_ahead() const { return ahead_ != nullptr; }

  /** Bytes of (uncompressed) data consumed so far. */
  uint64_t offset() const { return offset_; }
  const std::string& path() const { return path_; }
  const char* op() const { return op_; }

  /** DataLossError "[op] expected ..., got ... in <path> at byte <offset>". */
  [[noreturn]] void fail(const std::string& expected_got,
                         uint64_t at_offset) const;
  /** After fail(), every read throws its DataLossError again. */
  void throw_if_failed() const;

 private:
  [[noreturn]] void overrun(size_t n) const;
  void start_read_ahead();    // a thread is reserved (g_read_aheads)
  void release_read_ahead();  // gives the reservation back, once
  bool fill();  // refills view_ (buf_pos_ == buf_end_ before); false at end
  size_t read_file(unsigned char* dst, size_t n) const;
  // The file's next bytes into `dst` (plain reads) or `packed_` (compressed);
  // through ahead_ when it runs. Returns the bytes, empty at the end.
  std::span<const unsigned char> read_chunk(const AlignedBuffer& dst);

  std::string path_;
  const char* op_;
  Compression compression_;
  int fd_ = -1;
  uint64_t offset_ = 0;
  AlignedBuffer buf_;  // plain data when nothing reads ahead; inflated data
  // Where the buffered bytes are: buf_, or the read-ahead's current chunk.
  const unsigned char* view_ = nullptr;
  size_t buf_pos_ = 0, buf_end_ = 0;
  std::unique_ptr<ReadAhead> ahead_;
  pid_t ahead_pid_ = 0;            // the process whose thread ahead_ runs
  bool holds_read_ahead_ = false;  // counted in g_read_aheads
  mutable std::string failure_;    // the message of fail(), once it threw
  // Compressed input only.
  AlignedBuffer packed_;
  z_stream zs_{};
  bool zs_open_ = false, file_ended_ = false, stream_ended_ = false;
};

}  // namespace tapeflow::io::detail
