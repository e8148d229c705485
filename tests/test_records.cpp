// tpf::io record files: CRC32C, TFRecordReader/TFRecordWriter (plain, GZIP,
// ZLIB; corruption and truncation; files read ahead). The private InputStream
// under every record reader is in test_input_stream.cpp, Example protos in
// test_example.cpp.
#include <unistd.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <utility>

#include "io/crc32c_detail.hpp"
#include "support/check.hpp"
#include "support/fixed_threads.hpp"
#include "support/temp_files.hpp"
#include "tapeflow/io/crc32c.hpp"
#include "tapeflow/io/tfrecord.hpp"

namespace fs = std::filesystem;
namespace io = tpf::io;

using testing::deflate_bytes;
using testing::random_bytes;
using testing::slurp;
using testing::spit;
using testing::TempDir;

namespace {

/** The definition, one bit at a time: the reference for every fast path. */
uint32_t crc32c_bitwise(const std::string& s) {
  uint32_t c = 0xffffffffu;
  for (unsigned char b : s) {
    c ^= b;
    for (int i = 0; i < 8; ++i) c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1)));
  }
  return ~c;
}
uint32_t masked(const std::string& s) {
  const uint32_t c = crc32c_bitwise(s);
  return ((c >> 15) | (c << 17)) + 0xa282ead8u;
}

std::string le(uint64_t v, int bytes) {
  std::string s;
  for (int i = 0; i < bytes; ++i) s += static_cast<char>((v >> (8 * i)) & 0xff);
  return s;
}

/** One TFRecord frame built from the format's definition. */
std::string frame(const std::string& data) {
  const std::string len = le(data.size(), 8);
  return len + le(masked(len), 4) + data + le(masked(data), 4);
}

std::vector<std::string> read_all(const std::string& path,
                                  io::Compression c = io::Compression::kNone) {
  io::TFRecordReader r(path, c);
  std::vector<std::string> out;
  std::string rec;
  while (r.read(rec)) out.push_back(rec);
  return out;
}

/**
 * Reading `path` throws DataLossError naming the file and every part, and
 * reading on throws it again: never a clean end that hides the loss.
 */
void check_data_loss(const std::string& path,
                     const std::vector<std::string>& parts,
                     io::Compression c = io::Compression::kNone) {
  io::TFRecordReader r(path, c);
  std::string rec, msg;
  try {
    while (r.read(rec)) {
    }
    FAIL("expected DataLossError for " << path);
  } catch (const tpf::DataLossError& e) {
    msg = e.what();
  }
  CHECK_MESSAGE(msg.rfind("[TFRecordReader] expected", 0) == 0, msg);
  CHECK_MESSAGE(msg.find(path) != std::string::npos, msg);
  for (const auto& p : parts)
    CHECK_MESSAGE(msg.find(p) != std::string::npos, (msg + " lacks " + p));
  CHECK_THROWS_WITH_AS(r.read(rec), msg.c_str(), tpf::DataLossError);
}

}  // namespace

TEST_CASE(
    "crc32c: check value; every path, copying or not, is the definition") {
  CHECK(crc32c_bitwise("123456789") == 0xE3069283u);
  CHECK(io::crc32c("123456789") == 0xE3069283u);
  CHECK(io::crc32c("") == 0u);
  // 32 zero bytes: RFC 3720 B.4.
  CHECK(io::crc32c(std::string(32, '\0')) == 0x8A9136AAu);
  const std::string data = random_bytes(50000, 7);
  std::mt19937 rng(1);
  const bool sse = io::detail::crc32c_has_sse42();
  const bool avx512 = io::detail::crc32c_has_avx512();
  const bool avx2 = io::detail::crc32c_has_avx2_clmul();
  MESSAGE("SSE4.2 + PCLMUL: " << sse << ", AVX-512 VPCLMULQDQ: " << avx512
                              << ", AVX2 VPCLMULQDQ: " << avx2);
  // Every length up to a few 3-way blocks and folding steps, at every
  // alignment, and long ones that use the longest block several times.
  std::vector<size_t> lengths;
  for (size_t n = 0; n <= 2100; ++n) lengths.push_back(n);
  for (size_t n : {6143, 6144, 6145, 12289, 16383, 16384, 16385, 16639, 16640,
                   16641, 19992, 32775, 49990})
    lengths.push_back(n);
  for (size_t n : lengths) {
    const size_t at = rng() % 8;
    const std::string s = data.substr(at, n);
    const uint32_t want = crc32c_bitwise(s);
    CAPTURE(n);
    CHECK(io::crc32c(s) == want);
    CHECK(io::detail::crc32c_portable(0, s.data(), n) == want);
#if defined(__x86_64__)
    if (sse) CHECK(io::detail::crc32c_sse42(0, s.data(), n) == want);
    using CrcFn = uint32_t (*)(uint32_t, const void*, size_t);
    for (auto [has, crc] :
         {std::pair<bool, CrcFn>{avx512, io::detail::crc32c_avx512},
          std::pair<bool, CrcFn>{avx2, io::detail::crc32c_avx2}}) {
      if (!has) continue;
      CHECK(crc(0, s.data(), n) == want);
      CHECK(crc(0x12345678u, s.data(), n) ==
            io::detail::crc32c_portable(0x12345678u, s.data(), n));
    }
#endif
    // The copying CRCs: the same CRC, and the bytes land at a misaligned
    // destination with nothing written past them.
    using CopyFn = uint32_t (*)(uint32_t, void*, const void*, size_t);
    std::vector<CopyFn> copies = {io::detail::crc32c_copy,
                                  io::detail::crc32c_copy_generic};
#if defined(__x86_64__)
    if (avx512) copies.push_back(io::detail::crc32c_copy_avx512);
    if (avx2) copies.push_back(io::detail::crc32c_copy_avx2);
#endif
    for (CopyFn copy : copies) {
      std::string dst(n + 16, '#');
      char* d = dst.data() + rng() % 8;
      CHECK(copy(0, d, s.data(), n) == want);
      CHECK(std::string(d, n) == s);
      CHECK(std::string(d + n, dst.data() + dst.size()) ==
            std::string(dst.data() + dst.size() - (d + n), '#'));
      CHECK(copy(0x12345678u, d, s.data(), n) ==
            io::detail::crc32c_portable(0x12345678u, s.data(), n));
    }
    // The inlined CRC of a TFRecord length field.
    if (n == 8)
      CHECK(io::detail::crc32c_8(
                reinterpret_cast<const unsigned char*>(s.data())) == want);
    // Extending in two pieces gives the CRC of the whole.
    const size_t cut = n ? rng() % n : 0;
    CHECK(io::crc32c_extend(io::crc32c(s.substr(0, cut)), s.data() + cut,
                            n - cut) == want);
  }
}

TEST_CASE("crc32c: masking is TFRecord's and unmask inverts it") {
  for (uint32_t c : {0u, 1u, 0xE3069283u, 0xffffffffu, 0x12345678u}) {
    CHECK(io::mask_crc32c(c) == (((c >> 15) | (c << 17)) + 0xa282ead8u));
    CHECK(io::unmask_crc32c(io::mask_crc32c(c)) == c);
  }
}

TEST_CASE("TFRecordWriter writes the format's bytes; the reader reads them") {
  TempDir dir;
  const std::vector<std::string> recs = {"", "a", "hello world",
                                         random_bytes(5000, 3)};
  std::string expected;
  for (const auto& r : recs) expected += frame(r);
  {
    io::TFRecordWriter w(dir / "w.tfrecord");
    for (const auto& r : recs) w.write(r);
  }
  CHECK(slurp(dir / "w.tfrecord") == expected);
  spit(dir / "hand.tfrecord", expected);
  CHECK(read_all(dir / "hand.tfrecord") == recs);
  // offset() is the start of the next record.
  io::TFRecordReader r(dir / "hand.tfrecord");
  std::string rec;
  CHECK(r.offset() == 0);
  REQUIRE(r.read(rec));
  CHECK(r.offset() == 16);
  REQUIRE(r.read(rec));
  CHECK(r.offset() == 16 + 17);
  CHECK(r.path() == dir / "hand.tfrecord");
}

TEST_CASE("TFRecord round trips: none, GZIP, ZLIB") {
  TempDir dir;
  std::vector<std::string> recs;
  for (int i = 0; i < 300; ++i)
    recs.push_back(random_bytes(static_cast<size_t>(i * 37 % 2000), i));
  // Longer than any buffer, and read in growing pieces (1 MiB, 2 MiB, ...).
  recs.push_back(std::string((3 << 20) + 7, 'x'));
  recs.push_back("");
  for (auto c : {io::Compression::kNone, io::Compression::kGzip,
                 io::Compression::kZlib}) {
    CAPTURE(static_cast<int>(c));
    const std::string path = dir / "r.tfrecord";
    io::TFRecordWriter w(path, c);
    for (const auto& r : recs) w.write(r);
    w.close();
    w.close();  // idempotent
    const std::string bytes = slurp(path);
    if (c == io::Compression::kGzip) {
      CHECK(bytes.substr(0, 2) == "\x1f\x8b");
    } else if (c == io::Compression::kZlib) {
      CHECK(static_cast<unsigned char>(bytes[0]) == 0x78);
    }
    if (c != io::Compression::kNone) CHECK(bytes.size() < (1 << 20));
    CHECK(read_all(path, c) == recs);
  }
}

TEST_CASE("TFRecordWriter::flush makes written records readable") {
  TempDir dir;
  for (auto c : {io::Compression::kNone, io::Compression::kGzip}) {
    const std::string path = dir / "f.tfrecord";
    io::TFRecordWriter w(path, c);
    w.write("one");
    w.write("two");
    w.flush();
    io::TFRecordReader r(path, c);
    std::string rec;
    REQUIRE(r.read(rec));
    CHECK(rec == "one");
    REQUIRE(r.read(rec));
    CHECK(rec == "two");
    if (c == io::Compression::kNone) {
      CHECK_FALSE(r.read(rec));
    } else {
      // The GZIP stream is not finished yet: a reader sees it cut short.
      CHECK_THROWS_AS(r.read(rec), tpf::DataLossError);
    }
    w.write("three");
    w.close();
    CHECK(read_all(path, c) == std::vector<std::string>{"one", "two", "three"});
    CHECK_THROWS_AS(w.write("late"), tpf::IOError);
  }
}

TEST_CASE("TFRecordReader: missing file, unwritable path are IOErrors") {
  TempDir dir;
  CHECK_THROWS_AS(io::TFRecordReader(dir / "none.tfrecord"), tpf::IOError);
  CHECK_THROWS_AS(io::TFRecordWriter(dir / "no/such/dir/x.tfrecord"),
                  tpf::IOError);
  spit(dir / "empty.tfrecord", "");
  CHECK(read_all(dir / "empty.tfrecord").empty());
}

TEST_CASE("TFRecordReader: corrupt CRCs are DataLossErrors with the offset") {
  TempDir dir;
  const std::string a = frame("first"), b = frame("second record");
  const std::string path = dir / "c.tfrecord";

  std::string bad_len_crc = a + b;
  bad_len_crc[a.size() + 9] ^= 0x01;  // the second record's length CRC
  spit(path, bad_len_crc);
  check_data_loss(path, {"record length with masked CRC32C",
                         "at byte " + std::to_string(a.size())});

  std::string bad_data = a + b;
  bad_data[a.size() + 12 + 3] ^= 0x40;  // a byte of the second record's data
  spit(path, bad_data);
  const std::string crc_hex = [&] {
    char s[16];
    std::snprintf(s, sizeof s, "0x%08x", masked("second record"));
    return std::string(s);
  }();
  check_data_loss(path, {"record data with masked CRC32C " + crc_hex,
                         "at byte " + std::to_string(a.size() + 12)});

  std::string bad_footer = a + b;
  bad_footer[bad_footer.size() - 1] ^= 0x80;
  spit(path, bad_footer);
  check_data_loss(path, {"record data with masked CRC32C"});

  // The first record still comes out before the error.
  io::TFRecordReader r(path);
  std::string rec;
  REQUIRE(r.read(rec));
  CHECK(rec == "first");
  CHECK_THROWS_AS(r.read(rec), tpf::DataLossError);
}

TEST_CASE("TFRecordReader: records at every cut by the stream's buffer") {
  // A record wholly inside InputStream's 256 KiB buffer is parsed there; one
  // that its end cuts is read piecewise. Both give the same records, errors
  // and offsets, wherever the cut falls (header, data, footer, none).
  TempDir dir;
  const std::string path = dir / "b.tfrecord";
  const std::string b = frame("second record");
  for (size_t k : {0, 1, 8, 12, 13, 20, 25, 28, 29, 40}) {
    CAPTURE(k);
    const std::string first = random_bytes((size_t{1} << 18) - 16 - k, k);
    const std::string a = frame(first);
    const std::string at_b = "at byte " + std::to_string(a.size());
    const std::string at_data = "at byte " + std::to_string(a.size() + 12);
    spit(path, a + b + b);
    CHECK(read_all(path) ==
          std::vector<std::string>{first, "second record", "second record"});
    std::string bad = a + b;
    bad[a.size() + 9] ^= 0x01;
    spit(path, bad);
    check_data_loss(path, {"record length with masked CRC32C", at_b});
    bad = a + b;
    bad[a.size() + 12 + 3] ^= 0x40;
    spit(path, bad);
    check_data_loss(path, {"record data with masked CRC32C", at_data});
    spit(path, a + b.substr(0, 20));
    check_data_loss(path, {"(truncated record data)", at_data});
  }
}

TEST_CASE("TFRecordReader: truncation anywhere is a DataLossError") {
  TempDir dir;
  const std::string a = frame("first"), b = frame("0123456789");
  const std::string path = dir / "t.tfrecord";
  struct Case {
    size_t keep;  // bytes of the second record kept
    std::string what;
    size_t at;  // where the truncated part starts
  };
  const std::vector<Case> cases = {
      {5, "12 bytes of record header, got 5 (truncated record header)", 0},
      {12, "10 bytes of record data, got 0 (truncated record data)", 12},
      {17, "10 bytes of record data, got 5 (truncated record data)", 12},
      {22, "4 bytes of record footer, got 0 (truncated record footer)", 22},
      {24, "4 bytes of record footer, got 2 (truncated record footer)", 22},
  };
  for (const auto& c : cases) {
    CAPTURE(c.keep);
    spit(path, a + b.substr(0, c.keep));
    check_data_loss(path,
                    {c.what, "at byte " + std::to_string(a.size() + c.at)});
  }
}

TEST_CASE("TFRecordReader: a wrong length with a valid CRC") {
  TempDir dir;
  const std::string path = dir / "l.tfrecord";
  const std::string data = "abcdefgh";
  auto with_length = [&](uint64_t n) {
    const std::string len = le(n, 8);
    return len + le(masked(len), 4) + data + le(masked(data), 4);
  };
  // Shorter: the data CRC covers the wrong bytes.
  spit(path, with_length(4));
  check_data_loss(path, {"record data with masked CRC32C", "at byte 12"});
  // Longer: the file ends first.
  spit(path, with_length(100));
  check_data_loss(path, {"100 bytes of record data, got 12", "at byte 12"});
  // Absurd: memory follows the data that is there, not the header's claim.
  spit(path, with_length(uint64_t{1} << 62));
  check_data_loss(path, {"4611686018427387904 bytes of record data, got 12"});
  spit(path, with_length(~uint64_t{0}));
  check_data_loss(path, {"truncated record data"});
}

TEST_CASE("TFRecordReader: a damaged compressed stream is a DataLossError") {
  TempDir dir;
  const std::string path = dir / "z.tfrecord";
  {
    io::TFRecordWriter w(path, io::Compression::kGzip);
    for (int i = 0; i < 100; ++i) w.write(random_bytes(100, i));
  }
  const std::string bytes = slurp(path);
  spit(path, bytes.substr(0, bytes.size() / 2));
  check_data_loss(path, {"truncated stream"}, io::Compression::kGzip);
  std::string flipped = bytes;
  flipped[flipped.size() / 2] ^= 0x55;
  spit(path, flipped);
  CHECK_THROWS_AS(read_all(path, io::Compression::kGzip), tpf::DataLossError);
  // Plain data read as GZIP.
  spit(path, frame("plain"));
  CHECK_THROWS_AS(read_all(path, io::Compression::kGzip), tpf::DataLossError);
}

TEST_CASE("TFRecordReader: a file read ahead, records across its chunks") {
  // Files of 1 MiB and more are read a few 256 KiB chunks ahead by a thread
  // of their own while kernels may use two: records straddle chunks, one
  // spans three, and errors keep their offsets (test_input_stream checks
  // that such a file is read ahead).
  TempDir dir;
  const std::string path = dir / "big.tfrecord";
  std::mt19937 rng(9);
  std::vector<std::string> records;
  std::vector<size_t> starts;
  std::string file;
  // The long record starts past 1.5 MiB: a cut inside it leaves a file
  // large enough to be read ahead.
  size_t long_record = 0;
  while (file.size() < (size_t{3} << 20)) {
    const bool first_past = !long_record && file.size() > (size_t{3} << 19);
    if (first_past) long_record = records.size();
    const size_t n = first_past ? 700000 : rng() % 40000;
    records.push_back(random_bytes(n, static_cast<uint32_t>(records.size())));
    starts.push_back(file.size());
    file += frame(records.back());
  }
  spit(path, file);
  testing::FixedThreads threads(2);
  CHECK(read_all(path) == records);
  // The data of the record over the second chunk boundary, damaged there.
  const size_t boundary = size_t{2} << 18;
  size_t k = 0;
  while (starts[k + 1] <= boundary) ++k;
  const size_t data_start = starts[k] + 12;
  REQUIRE(data_start < boundary);
  REQUIRE(boundary < data_start + records[k].size());
  std::string bad = file;
  bad[boundary] ^= 0x08;
  spit(path, bad);
  check_data_loss(path, {"record data with masked CRC32C",
                         "at byte " + std::to_string(data_start)});
  // Cut inside the long record.
  spit(path, file.substr(0, starts[long_record] + 12 + 500000));
  check_data_loss(path,
                  {"700000 bytes of record data, got 500000",
                   "at byte " + std::to_string(starts[long_record] + 12)});
  // Closed early, with the reading thread ahead of it.
  spit(path, file);
  for (int i = 0; i < 10; ++i) {
    io::TFRecordReader r(path);
    std::string rec;
    CHECK(r.read(rec));
  }
}
