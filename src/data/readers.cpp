// File sources of tpf::data over io::detail::InputStream.
#include "tapeflow/data/readers.hpp"

#include <algorithm>
#include <functional>

#include "io/input_stream.hpp"
#include "tapeflow/io/tfrecord.hpp"

namespace tapeflow::data {

namespace detail {
namespace {

using io::detail::InputStream;

/**
 * Walks a list of files, one open Source (an InputStream or a reader over
 * one) at a time. An exception while opening or reading a file abandons that
 * file, so the next call goes on with the following one: the rest of a
 * damaged file cannot be trusted.
 */
template <class Source>
class FileWalker {
 public:
  using Open = std::function<std::unique_ptr<Source>(const std::string&)>;
  FileWalker(std::vector<std::string> files, Open open)
      : files_(std::move(files)), open_(std::move(open)) {}

  /** Calls read(source) until it yields; nullopt once every file is done. */
  template <class Read>
  std::optional<std::string> next(Read&& read) {
    while (source_ || next_file_ < files_.size()) {
      try {
        if (!source_) {
          source_ = open_(files_[next_file_++]);
          continue;
        }
        if (std::optional<std::string> r = read(*source_)) return r;
        source_.reset();
      } catch (...) {
        source_.reset();
        throw;
      }
    }
    return std::nullopt;
  }

 private:
  std::vector<std::string> files_;
  Open open_;
  size_t next_file_ = 0;
  std::unique_ptr<Source> source_;
};

class TextLineIterator final : public IteratorImpl<std::string> {
 public:
  TextLineIterator(const std::vector<std::string>& files,
                   io::Compression compression)
      : walker_(files, [compression](const std::string& path) {
          return std::make_unique<InputStream>(path, compression,
                                               "TextLineDataset");
        }) {}

  std::optional<std::string> next() override {
    return walker_.next([](InputStream& s) -> std::optional<std::string> {
      std::string line;
      if (!s.read_line(line)) return std::nullopt;
      return line;
    });
  }

 private:
  FileWalker<InputStream> walker_;
};

/**
 * The size of a compressed body is unknown until its end, so the reader
 * keeps record_bytes + footer_bytes bytes ahead: a record is only handed out
 * once a whole footer is known to follow it.
 */
class FixedLengthRecordIterator final : public IteratorImpl<std::string> {
 public:
  FixedLengthRecordIterator(const std::vector<std::string>& files,
                            int64_t record_bytes, int64_t header_bytes,
                            int64_t footer_bytes, io::Compression compression)
      : walker_(files,
                [this, compression](const std::string& path) {
                  auto s = std::make_unique<InputStream>(
                      path, compression, "FixedLengthRecordDataset");
                  window_.clear();
                  if (s->skip(header_) < header_)
                    s->fail("a header of " + std::to_string(header_) +
                                " bytes, got a file of " +
                                std::to_string(s->offset()),
                            0);
                  return s;
                }),
        record_(static_cast<size_t>(record_bytes)),
        header_(static_cast<size_t>(header_bytes)),
        footer_(static_cast<size_t>(footer_bytes)) {}

  std::optional<std::string> next() override {
    return walker_.next([this](InputStream& s) -> std::optional<std::string> {
      const size_t need = record_ + footer_;
      fill_window(s, need);
      if (window_.size() == need) {
        std::string record = window_.substr(0, record_);
        window_.erase(0, record_);
        return record;
      }
      if (window_.size() == footer_) return std::nullopt;
      const uint64_t start = s.offset() - window_.size();
      if (window_.size() < footer_)
        s.fail("a footer of " + std::to_string(footer_) + " bytes, got " +
                   std::to_string(window_.size()),
               start);
      s.fail("a body of whole " + std::to_string(record_) +
                 "-byte records, got a partial record of " +
                 std::to_string(window_.size() - footer_) + " bytes" +
                 (footer_ ? " before the footer" : ""),
             start);
    });
  }

 private:
  /**
   * Reads until the window holds `need` bytes or the file ends. The window
   * grows with what the file holds, in steps of at most kReadStep: a
   * record_bytes far beyond the file is a partial-record DataLossError, not
   * an allocation of record_bytes.
   */
  void fill_window(InputStream& s, size_t need) {
    constexpr size_t kReadStep = size_t{1} << 20;
    while (window_.size() < need) {
      const size_t have = window_.size();
      const size_t step = std::min(need - have, kReadStep);
      window_.resize(have + step);
      const size_t got = s.read(window_.data() + have, step);
      window_.resize(have + got);
      if (got < step) return;
    }
  }

  FileWalker<InputStream> walker_;
  const size_t record_, header_, footer_;
  std::string window_;
};

/** The records of TFRecord files, every CRC checked by TFRecordReader. */
class TFRecordIterator final : public IteratorImpl<std::string> {
 public:
  TFRecordIterator(const std::vector<std::string>& files,
                   io::Compression compression)
      : walker_(files, [compression](const std::string& path) {
          return std::make_unique<io::TFRecordReader>(path, compression);
        }) {}

  std::optional<std::string> next() override {
    return walker_.next(
        [](io::TFRecordReader& r) -> std::optional<std::string> {
          std::string record;
          if (!r.read(record)) return std::nullopt;
          return record;
        });
  }

 private:
  FileWalker<io::TFRecordReader> walker_;
};

}  // namespace

std::unique_ptr<IteratorImpl<std::string>> text_line_iterator(
    const std::vector<std::string>& files, io::Compression compression) {
  return std::make_unique<TextLineIterator>(files, compression);
}

std::unique_ptr<IteratorImpl<std::string>> fixed_length_record_iterator(
    const std::vector<std::string>& files, int64_t record_bytes,
    int64_t header_bytes, int64_t footer_bytes, io::Compression compression) {
  return std::make_unique<FixedLengthRecordIterator>(
      files, record_bytes, header_bytes, footer_bytes, compression);
}

std::unique_ptr<IteratorImpl<std::string>> tfrecord_iterator(
    const std::vector<std::string>& files, io::Compression compression) {
  return std::make_unique<TFRecordIterator>(files, compression);
}

}  // namespace detail

TextLineDataset::TextLineDataset(std::vector<std::string> filenames,
                                 const std::string& compression_type)
    : Dataset<std::string>(
          [files = std::move(filenames),
           c = io::parse_compression(compression_type, "TextLineDataset")] {
            return detail::text_line_iterator(files, c);
          }) {}

FixedLengthRecordDataset::FixedLengthRecordDataset(
    std::vector<std::string> filenames, int64_t record_bytes,
    int64_t header_bytes, int64_t footer_bytes,
    const std::string& compression_type)
    : Dataset<std::string>([files = std::move(filenames), record_bytes,
                            header_bytes, footer_bytes,
                            c = io::parse_compression(
                                compression_type, "FixedLengthRecordDataset")] {
        return detail::fixed_length_record_iterator(
            files, record_bytes, header_bytes, footer_bytes, c);
      }) {
  if (record_bytes < 1 || header_bytes < 0 || footer_bytes < 0)
    throw ValueError(
        "[FixedLengthRecordDataset] expected record_bytes >= 1 and "
        "non-negative header_bytes and footer_bytes, got " +
        std::to_string(record_bytes) + ", " + std::to_string(header_bytes) +
        " and " + std::to_string(footer_bytes));
}

TFRecordDataset::TFRecordDataset(std::vector<std::string> filenames,
                                 const std::string& compression_type)
    : Dataset<std::string>(
          [files = std::move(filenames),
           c = io::parse_compression(compression_type, "TFRecordDataset")] {
            return detail::tfrecord_iterator(files, c);
          }) {}

Dataset<std::tuple<Tensor, Tensor>> mnist(const std::string& dir,
                                          const std::string& split) {
  io::MnistData d = io::load_mnist(dir, split);
  return from_tensor_slices(std::tuple<Tensor, Tensor>{d.images, d.labels});
}

}  // namespace tapeflow::data
