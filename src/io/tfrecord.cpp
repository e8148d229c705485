#include "tapeflow/io/tfrecord.hpp"

#include <algorithm>
#include <bit>
#include <cstdio>
#include <cstring>
#include <span>

#include "core/op_error.hpp"
#include "crc32c_detail.hpp"
#include "input_stream.hpp"
#include "output_stream.hpp"
#include "tapeflow/core/error.hpp"
#include "tapeflow/io/crc32c.hpp"

namespace tapeflow::io {

namespace {

constexpr const char* kReader = "TFRecordReader";
constexpr const char* kWriter = "TFRecordWriter";
constexpr size_t kHeaderBytes = 12;  // length + its CRC
constexpr size_t kFooterBytes = 4;   // the data's CRC

// A corrupt (or hostile) header can claim up to 2^64 bytes, so a long record
// is read in growing pieces and the memory follows the data actually there.
constexpr size_t kFirstPiece = size_t{1} << 20;

static_assert(std::endian::native == std::endian::little,
              "TFRecord integers are little-endian: loads are plain copies");

uint64_t load_u64(const unsigned char* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}
uint32_t load_u32(const unsigned char* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
void store_u64(unsigned char* p, uint64_t v) {
  std::memcpy(p, &v, 8);
}
void store_u32(unsigned char* p, uint32_t v) {
  std::memcpy(p, &v, 4);
}

std::string hex(uint32_t v) {
  char s[11];
  std::snprintf(s, sizeof s, "0x%08x", v);
  return s;
}

/** Reads exactly n bytes of `what` into `dst` or fails as truncated. */
void read_all(detail::InputStream& in, char* dst, size_t n, const char* what) {
  const uint64_t start = in.offset();
  const size_t got = in.read(dst, n);
  if (got != n)
    in.fail(std::to_string(n) + " bytes of " + what + ", got " +
                std::to_string(got) + " (truncated " + what + ")",
            start);
}

[[noreturn, gnu::cold]] void fail_data(const detail::InputStream& in,
                                       uint32_t stored, uint32_t actual,
                                       uint64_t length, uint64_t data_start) {
  in.fail("record data with masked CRC32C " + hex(stored) + ", got " +
              hex(actual) + " (corrupt data of " + std::to_string(length) +
              " bytes)",
          data_start);
}

// Inlined in the per-record path; only a failure pays for a call.
inline void check_data(const detail::InputStream& in, uint32_t stored,
                       uint32_t actual, uint64_t length, uint64_t data_start) {
  if (stored != actual) fail_data(in, stored, actual, length, data_start);
}

/** `stream`, or an IOError naming `op` when it was moved away. */
template <class Stream>
Stream& open_stream(const std::unique_ptr<Stream>& stream, const char* op) {
  if (!stream)
    throw op_error<IOError>(op, "expected an open file, got a moved-from ", op);
  return *stream;
}

}  // namespace

TFRecordReader::TFRecordReader(const std::string& path, Compression compression)
    : in_(std::make_unique<detail::InputStream>(path, compression, kReader)) {}
TFRecordReader::~TFRecordReader() = default;
TFRecordReader::TFRecordReader(TFRecordReader&&) noexcept = default;
TFRecordReader& TFRecordReader::operator=(TFRecordReader&&) noexcept = default;

uint64_t TFRecordReader::offset() const {
  return open_stream(in_, "TFRecordReader").offset();
}
const std::string& TFRecordReader::path() const {
  return open_stream(in_, "TFRecordReader").path();
}

bool TFRecordReader::read(std::string& record) {
  detail::InputStream& in = open_stream(in_, "TFRecordReader");
  in.throw_if_failed();
  const uint64_t start = in.offset();
  // Usually the whole record is already in the stream's buffer: then it is
  // parsed there and copied out once, its CRC taken during the copy.
  const std::span<const unsigned char> buffered = in.peek();
  unsigned char header_copy[kHeaderBytes];
  const unsigned char* header = buffered.data();
  if (buffered.size() < kHeaderBytes) {
    if (!in.read_exact(header_copy, kHeaderBytes, "record header"))
      return false;
    header = header_copy;
  }
  const uint64_t length = load_u64(header);
  const uint32_t stored = load_u32(header + 8);
  const uint32_t actual = mask_crc32c(detail::crc32c_8(header));
  if (stored != actual)
    in.fail("a record length with masked CRC32C " + hex(stored) + ", got " +
                hex(actual) + " (corrupt length " + std::to_string(length) +
                ")",
            start);
  const uint64_t data_start = start + kHeaderBytes;

  if (header != header_copy) {
    const size_t after_header = buffered.size() - kHeaderBytes;
    if (after_header >= kFooterBytes && length <= after_header - kFooterBytes) {
      const unsigned char* data = header + kHeaderBytes;
      record.resize(length);
      const uint32_t actual_data = mask_crc32c(
          detail::crc32c_copy(0, record.data(), data, record.size()));
      check_data(in, load_u32(data + length), actual_data, length, data_start);
      in.consume(kHeaderBytes + length + kFooterBytes);
      return true;
    }
    in.consume(kHeaderBytes);
  }

  if (length <= kFirstPiece) {
    record.resize(length);
    read_all(in, record.data(), length, "record data");
  } else {
    record.clear();
    size_t piece = kFirstPiece;
    while (record.size() < length) {
      const size_t have = record.size();
      const size_t want =
          static_cast<size_t>(std::min<uint64_t>(length - have, piece));
      record.resize(have + want);
      const size_t got = in.read(record.data() + have, want);
      if (got != want)
        in.fail(std::to_string(length) + " bytes of record data, got " +
                    std::to_string(have + got) + " (truncated record data)",
                data_start);
      piece *= 2;
    }
  }

  unsigned char footer[kFooterBytes];
  read_all(in, reinterpret_cast<char*>(footer), kFooterBytes, "record footer");
  check_data(in, load_u32(footer),
             mask_crc32c(crc32c_extend(0, record.data(), record.size())),
             length, data_start);
  return true;
}

TFRecordWriter::TFRecordWriter(const std::string& path, Compression compression)
    : out_(std::make_unique<detail::OutputStream>(path, compression, kWriter)) {
}

TFRecordWriter::~TFRecordWriter() {
  if (!out_) return;
  try {
    out_->close();
  } catch (const Error&) {
    // A destructor cannot report it; close() is there for callers who care.
  }
}
TFRecordWriter::TFRecordWriter(TFRecordWriter&&) noexcept = default;
TFRecordWriter& TFRecordWriter::operator=(TFRecordWriter&& other) noexcept {
  if (this != &other) {
    TFRecordWriter old(std::move(*this));  // closes our file when it goes
    out_ = std::move(other.out_);
  }
  return *this;
}

void TFRecordWriter::write(std::string_view record) {
  detail::OutputStream& out = open_stream(out_, "TFRecordWriter");
  unsigned char header[kHeaderBytes];
  store_u64(header, record.size());
  store_u32(header + 8, mask_crc32c(detail::crc32c_8(header)));
  unsigned char footer[4];
  store_u32(footer, mask_crc32c(crc32c(record)));
  out.write(header, kHeaderBytes);
  out.write(record.data(), record.size());
  out.write(footer, 4);
}

void TFRecordWriter::flush() {
  open_stream(out_, "TFRecordWriter").flush();
}
void TFRecordWriter::close() {
  if (out_) out_->close();
}

}  // namespace tapeflow::io
