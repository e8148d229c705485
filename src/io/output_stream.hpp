#pragma once
// Buffered sequential writing of plain, GZIP or ZLIB files: the counterpart
// of InputStream, for the record writers.
#include <zlib.h>

#include <string>
#include <vector>

#include "tapeflow/io/compression.hpp"

namespace tapeflow::io::detail {

class OutputStream {
 public:
  /** Creates (or truncates) `path`; failure is an IOError naming `op`. */
  OutputStream(std::string path, Compression compression, const char* op);
  /** Closes the file without finishing a compressed stream. */
  ~OutputStream();
  OutputStream(const OutputStream&) = delete;
  OutputStream& operator=(const OutputStream&) = delete;

  void write(const void* data, size_t n);
  /** Writes out the buffer (sync-flushing a compressed stream). */
  void flush();
  /** Finishes the stream and closes the file; IOError if that fails. */
  void close();
  bool closed() const { return fd_ < 0; }
  const std::string& path() const { return path_; }

 private:
  void drain(int zflush);  // buf_ → file, through deflate if compressed
  void write_file(const unsigned char* data, size_t n);
  void check_open() const;
  /**
   * Remembers a failed write and throws it. The file then ends in part of
   * the buffer, cut anywhere: every later write, flush and close refuses,
   * so that no record follows a partial one (readers see a truncated end).
   */
  [[noreturn]] void fail(const std::string& why);

  std::string path_;
  const char* op_;
  Compression compression_;
  int fd_ = -1;
  std::vector<unsigned char> buf_;
  size_t used_ = 0;
  std::string failure_;  // why a write failed; empty while none has
  // Compressed output only.
  std::vector<unsigned char> packed_;
  z_stream zs_{};
  bool zs_open_ = false;
};

}  // namespace tapeflow::io::detail
