#pragma once
// TFRecord files: TensorFlow's framing of binary records (usually serialized
// tf.train.Example protos, see example.hpp), plain or GZIP/ZLIB compressed.
// Each record is
//   uint64 length (little-endian)
//   uint32 masked CRC32C of the 8 length bytes
//   length bytes of data
//   uint32 masked CRC32C of the data
// (masks in crc32c.hpp), so files interchange with tf.io.TFRecordWriter and
// tf.data.TFRecordDataset.
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "tapeflow/io/compression.hpp"

namespace tapeflow::io {

namespace detail {
class InputStream;
class OutputStream;
}  // namespace detail

/** Reads the records of one TFRecord file in order, checking every CRC. */
class TFRecordReader {
 public:
  /**
   * Opens `path`; a missing or unreadable file is an IOError. GZIP and ZLIB
   * must be named (as in TensorFlow): the data is not sniffed.
   */
  explicit TFRecordReader(const std::string& path,
                          Compression compression = Compression::kNone);
  ~TFRecordReader();
  TFRecordReader(TFRecordReader&&) noexcept;
  TFRecordReader& operator=(TFRecordReader&&) noexcept;

  /**
   * Reads the next record into `record` (its capacity is reused). Returns
   * false at a clean end of the file. A CRC mismatch or a truncated header,
   * data or footer is a DataLossError "[TFRecordReader] expected ..., got
   * ... in <path> at byte <offset>"; after one, every read() throws it
   * again.
   */
  bool read(std::string& record);

  /**
   * Bytes consumed so far (of the uncompressed data): after read() returns,
   * the offset of the next record.
   */
  uint64_t offset() const;
  const std::string& path() const;

 private:
  std::unique_ptr<detail::InputStream> in_;
};

/** Writes records to a new TFRecord file (an existing one is replaced). */
class TFRecordWriter {
 public:
  /** Creates `path`; failure is an IOError naming it. */
  explicit TFRecordWriter(const std::string& path,
                          Compression compression = Compression::kNone);
  /** close(), with any error swallowed: call close() to see errors. */
  ~TFRecordWriter();
  TFRecordWriter(TFRecordWriter&&) noexcept;
  TFRecordWriter& operator=(TFRecordWriter&&) noexcept;

  /**
   * Appends one record (buffered). After a write to the file fails (a full
   * disk), the file ends in part of a record: every later write, flush and
   * close is an IOError saying so, and the records before stay readable.
   */
  void write(std::string_view record);
  /**
   * Hands everything written so far to the operating system (a GZIP/ZLIB
   * stream is sync-flushed), so a reader sees every complete record. No
   * fsync.
   */
  void flush();
  /**
   * Finishes the file (and the compressed stream); later calls, and calls on
   * a moved-from writer, do nothing. write() and flush() on a moved-from
   * writer are an IOError.
   */
  void close();

 private:
  std::unique_ptr<detail::OutputStream> out_;
};

}  // namespace tapeflow::io
