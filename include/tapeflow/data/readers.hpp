#pragma once
// File sources of tpf::data: text lines, fixed-length records, TFRecord,
// MNIST (IDX).
// Every reader goes through one buffered stream (plain, GZIP or ZLIB), so a
// damaged file is a DataLossError "[op] expected ... in <file> at byte <n>".
// After an error the reader abandons that file and goes on with the next
// one, which is what ignore_errors() relies on.
#include <concepts>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <tuple>
#include <vector>

#include "tapeflow/data/dataset.hpp"
#include "tapeflow/io/compression.hpp"
#include "tapeflow/io/idx.hpp"

namespace tapeflow::data {

namespace detail {
std::unique_ptr<IteratorImpl<std::string>> text_line_iterator(
    const std::vector<std::string>& files, io::Compression compression);
std::unique_ptr<IteratorImpl<std::string>> fixed_length_record_iterator(
    const std::vector<std::string>& files, int64_t record_bytes,
    int64_t header_bytes, int64_t footer_bytes, io::Compression compression);
std::unique_ptr<IteratorImpl<std::string>> tfrecord_iterator(
    const std::vector<std::string>& files, io::Compression compression);
}  // namespace detail

/**
 * The lines of each file in turn, without "\n" (or "\r\n"); a last line
 * without a newline still counts. compression_type: "", "GZIP" or "ZLIB".
 */
class TextLineDataset : public Dataset<std::string> {
 public:
  explicit TextLineDataset(std::vector<std::string> filenames,
                           const std::string& compression_type = "");
  // A braced list of names means files: without this overload
  // TextLineDataset({a, b}) could also read as (filename a, compression b).
  explicit TextLineDataset(std::initializer_list<std::string> filenames,
                           const std::string& compression_type = "")
      : TextLineDataset(std::vector<std::string>(filenames), compression_type) {
  }
  template <std::convertible_to<std::string> S>
  explicit TextLineDataset(const S& filename,
                           const std::string& compression_type = "")
      : TextLineDataset(std::vector<std::string>{std::string(filename)},
                        compression_type) {}
};

/**
 * Records of record_bytes bytes from each file, after skipping header_bytes
 * and before footer_bytes. A body that is not a whole number of records is a
 * DataLossError naming the file and the offset of the partial record.
 */
class FixedLengthRecordDataset : public Dataset<std::string> {
 public:
  explicit FixedLengthRecordDataset(std::vector<std::string> filenames,
                                    int64_t record_bytes,
                                    int64_t header_bytes = 0,
                                    int64_t footer_bytes = 0,
                                    const std::string& compression_type = "");
  explicit FixedLengthRecordDataset(
      std::initializer_list<std::string> filenames, int64_t record_bytes,
      int64_t header_bytes = 0, int64_t footer_bytes = 0,
      const std::string& compression_type = "")
      : FixedLengthRecordDataset(std::vector<std::string>(filenames),
                                 record_bytes, header_bytes, footer_bytes,
                                 compression_type) {}
  template <std::convertible_to<std::string> S>
  explicit FixedLengthRecordDataset(const S& filename, int64_t record_bytes,
                                    int64_t header_bytes = 0,
                                    int64_t footer_bytes = 0,
                                    const std::string& compression_type = "")
      : FixedLengthRecordDataset(
            std::vector<std::string>{std::string(filename)}, record_bytes,
            header_bytes, footer_bytes, compression_type) {}
};

/**
 * The records of TFRecord files (io::TFRecordReader: both CRCs of every
 * record checked), usually serialized tf.train.Example protos for
 * io::parse_example. compression_type: "", "GZIP" or "ZLIB".
 */
class TFRecordDataset : public Dataset<std::string> {
 public:
  explicit TFRecordDataset(std::vector<std::string> filenames,
                           const std::string& compression_type = "");
  explicit TFRecordDataset(std::initializer_list<std::string> filenames,
                           const std::string& compression_type = "")
      : TFRecordDataset(std::vector<std::string>(filenames), compression_type) {
  }
  template <std::convertible_to<std::string> S>
  explicit TFRecordDataset(const S& filename,
                           const std::string& compression_type = "")
      : TFRecordDataset(std::vector<std::string>{std::string(filename)},
                        compression_type) {}
};

/**
 * (image, label) pairs of one MNIST-format split (see io::load_mnist):
 * float32 1×28×28 images in [0, 1] and int64 scalar labels. The files are
 * read when this is called.
 */
Dataset<std::tuple<Tensor, Tensor>> mnist(
    const std::string& dir = io::kDefaultMnistDir,
    const std::string& split = "train");

}  // namespace tapeflow::data
