// tpf::data's file sources: text lines and fixed-length records (plain, GZIP,
// ZLIB; damaged files), MNIST IDX files. Every file is written here.
#include <unistd.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "support/check.hpp"
#include "support/data_helpers.hpp"
#include "support/temp_files.hpp"

namespace data = tpf::data;
namespace fs = std::filesystem;
using testing::collect;
using testing::throws_with;

using testing::gzip;
using testing::spit;
using testing::TempDir;
using testing::zlib;

namespace {}  // namespace

TEST_CASE("TextLineDataset: lines of every file, plain/GZIP/ZLIB") {
  TempDir dir;
  const std::string a = "first\nsecond\r\n\nlast without newline";
  const std::string b = "b1\nb2\n";
  spit(dir / "a.txt", a);
  spit(dir / "b.txt", b);
  spit(dir / "empty.txt", "");
  const std::vector<std::string> want = {
      "first", "second", "", "last without newline", "b1", "b2"};
  CHECK(collect(data::TextLineDataset(
            {dir / "a.txt", dir / "empty.txt", dir / "b.txt"})) == want);
  spit(dir / "a.gz", gzip(a));
  spit(dir / "b.gz", gzip(b));
  CHECK(collect(data::TextLineDataset({dir / "a.gz", dir / "b.gz"}, "GZIP")) ==
        want);
  spit(dir / "a.z", zlib(a));
  spit(dir / "b.z", zlib(b));
  CHECK(collect(data::TextLineDataset({dir / "a.z", dir / "b.z"}, "ZLIB")) ==
        want);
  // Concatenated gzip members continue the data (`cat a.gz b.gz`).
  spit(dir / "ab.gz", gzip(a + "\n") + gzip(b));
  CHECK(collect(data::TextLineDataset(dir / "ab.gz", "GZIP")) == want);

  // A pipeline over lines: parse, batch.
  spit(dir / "nums.txt", "1 2\n3 4\n5 6\n");
  auto rows = data::TextLineDataset(dir / "nums.txt")
                  .map([](const std::string& line) {
                    float x = 0, y = 0;
                    std::sscanf(line.c_str(), "%f %f", &x, &y);
                    return tpf::tensor({x, y});
                  })
                  .batch(2);
  auto batches = collect(rows);
  REQUIRE(batches.size() == 2);
  CHECK_CLOSE(batches[0], tpf::tensor({{1.f, 2.f}, {3.f, 4.f}}));

  throws_with<tpf::ValueError>(
      [&] { data::TextLineDataset(dir / "a.txt", "LZ4"); },
      {"[TextLineDataset]", "LZ4"});
}

TEST_CASE("TextLineDataset: damaged and missing files") {
  TempDir dir;
  std::string text;
  for (int i = 0; i < 2000; ++i) text += "line " + std::to_string(i) + "\n";
  const std::string packed = gzip(text);
  spit(dir / "cut.gz", packed.substr(0, packed.size() / 2));
  throws_with<tpf::DataLossError>(
      [&] { collect(data::TextLineDataset(dir / "cut.gz", "GZIP")); },
      {"[TextLineDataset] expected", dir / "cut.gz", "at byte", "truncated"});
  std::string bad = packed;
  for (size_t i = 40; i < 60; ++i) bad[i] = static_cast<char>(bad[i] ^ 0x5a);
  spit(dir / "bad.gz", bad);
  throws_with<tpf::DataLossError>(
      [&] { collect(data::TextLineDataset(dir / "bad.gz", "GZIP")); },
      {"[TextLineDataset] expected", dir / "bad.gz", "at byte"});
  spit(dir / "trailing.z", zlib("x\n") + "junk");
  throws_with<tpf::DataLossError>(
      [&] { collect(data::TextLineDataset(dir / "trailing.z", "ZLIB")); },
      {"trailing bytes", dir / "trailing.z", "at byte 2"});
  throws_with<tpf::IOError>(
      [&] { collect(data::TextLineDataset(dir / "missing.txt")); },
      {"[TextLineDataset]", dir / "missing.txt"});

  // ignore_errors gives up on the damaged or missing file and goes on.
  spit(dir / "ok.txt", "ok\n");
  auto lines =
      collect(data::TextLineDataset({dir / "missing.txt", dir / "ok.txt"})
                  .ignore_errors());
  CHECK(lines == std::vector<std::string>{"ok"});
  spit(dir / "ok.gz", gzip("ok\n"));
  lines = collect(data::TextLineDataset({dir / "cut.gz", dir / "ok.gz"}, "GZIP")
                      .ignore_errors());
  CHECK(lines.back() == "ok");
  CHECK(lines.size() < 2000);
}

TEST_CASE("FixedLengthRecordDataset: header, records, footer") {
  TempDir dir;
  const std::string body = "AAAABBBBCCCC";
  const std::string file = "hdr" + body + "ft";
  spit(dir / "r.bin", file);
  spit(dir / "s.bin", "hdrDDDDft");
  const std::vector<std::string> want = {"AAAA", "BBBB", "CCCC", "DDDD"};
  CHECK(collect(data::FixedLengthRecordDataset({dir / "r.bin", dir / "s.bin"},
                                               4, 3, 2)) == want);
  spit(dir / "r.gz", gzip(file));
  spit(dir / "s.gz", gzip("hdrDDDDft"));
  CHECK(collect(data::FixedLengthRecordDataset({dir / "r.gz", dir / "s.gz"}, 4,
                                               3, 2, "GZIP")) == want);
  spit(dir / "r.z", zlib(file));
  CHECK(collect(data::FixedLengthRecordDataset(dir / "r.z", 4, 3, 2, "ZLIB"))
            .size() == 3);
  spit(dir / "plain.bin", body);
  CHECK(collect(data::FixedLengthRecordDataset(dir / "plain.bin", 6)) ==
        std::vector<std::string>{"AAAABB", "BBCCCC"});
  // Header and footer only: no records.
  spit(dir / "hf.bin", "hdrft");
  CHECK(
      collect(data::FixedLengthRecordDataset(dir / "hf.bin", 4, 3, 2)).empty());
  CHECK_THROWS_AS(data::FixedLengthRecordDataset(dir / "r.bin", 0),
                  tpf::ValueError);
}

TEST_CASE(
    "FixedLengthRecordDataset: a record size beyond the file reads the "
    "file, not record_bytes") {
  TempDir dir;
  spit(dir / "r.bin", "hdrAAAABBBBft");
  for (int64_t record : {int64_t{1} << 40, INT64_MAX})
    throws_with<tpf::DataLossError>(
        [&] {
          collect(data::FixedLengthRecordDataset(dir / "r.bin", record, 3, 2));
        },
        {"partial record of 8 bytes", "at byte 3"});
  spit(dir / "r.gz", gzip("hdrAAAABBBBft"));
  throws_with<tpf::DataLossError>(
      [&] {
        collect(data::FixedLengthRecordDataset(dir / "r.gz", int64_t{1} << 40,
                                               3, INT64_MAX, "GZIP"));
      },
      {"a footer of", "got 10", "at byte 3"});
}

TEST_CASE(
    "FixedLengthRecordDataset: a partial record is DataLoss, not a skip") {
  TempDir dir;
  // header 3, two records of 4, 3 stray bytes at byte 11, footer 2.
  spit(dir / "odd.bin", "hdrAAAABBBBxyzft");
  auto odd = data::FixedLengthRecordDataset(dir / "odd.bin", 4, 3, 2);
  auto it = odd.make_iterator();
  CHECK(*it.get_next() == "AAAA");
  CHECK(*it.get_next() == "BBBB");
  throws_with<tpf::DataLossError>(
      [&] { it.get_next(); },
      {"[FixedLengthRecordDataset] expected a body of whole 4-byte records",
       "partial record of 3 bytes", dir / "odd.bin", "at byte 11"});
  // Same in a compressed file: the offset counts uncompressed bytes.
  spit(dir / "odd.gz", gzip("hdrAAAABBBBxyzft"));
  throws_with<tpf::DataLossError>(
      [&] {
        collect(
            data::FixedLengthRecordDataset(dir / "odd.gz", 4, 3, 2, "GZIP"));
      },
      {dir / "odd.gz", "at byte 11"});
  // Shorter than the header; shorter than the footer.
  spit(dir / "short.bin", "hd");
  throws_with<tpf::DataLossError>(
      [&] { collect(data::FixedLengthRecordDataset(dir / "short.bin", 4, 3)); },
      {"a header of 3 bytes, got a file of 2", dir / "short.bin", "at byte 0"});
  spit(dir / "nofoot.bin", "hdrf");
  throws_with<tpf::DataLossError>(
      [&] {
        collect(data::FixedLengthRecordDataset(dir / "nofoot.bin", 4, 3, 2));
      },
      {"a footer of 2 bytes, got 1", "at byte 3"});
  // ignore_errors drops the rest of the damaged file only.
  spit(dir / "good.bin", "hdrCCCCft");
  auto kept = collect(data::FixedLengthRecordDataset(
                          {dir / "odd.bin", dir / "good.bin"}, 4, 3, 2)
                          .ignore_errors());
  CHECK(kept == std::vector<std::string>{"AAAA", "BBBB", "CCCC"});
}

TEST_CASE("mnist: (image, label) pairs from IDX files") {
  TempDir dir;
  // 3 images of 2x2 and their labels, big-endian IDX headers.
  std::string images(
      "\x00\x00\x08\x03\x00\x00\x00\x03\x00\x00\x00\x02"
      "\x00\x00\x00\x02",
      16);
  for (int i = 0; i < 12; ++i) images += static_cast<char>(i * 20);
  std::string labels("\x00\x00\x08\x01\x00\x00\x00\x03\x07\x02\x09", 11);
  spit(dir / "train-images-idx3-ubyte", images);
  spit(dir / "train-labels-idx1-ubyte.gz", gzip(labels));
  auto ds = data::mnist(dir.path.string(), "train");
  CHECK(ds.cardinality() == 3);
  auto all = collect(ds);
  REQUIRE(all.size() == 3);
  auto& [img, label] = all[1];
  CHECK(img.shape() == tpf::Shape{1, 2, 2});
  CHECK(img.dtype() == tpf::float32);
  CHECK_CLOSE(
      img, tpf::reshape(tpf::tensor({80.f, 100.f, 120.f, 140.f}), {1, 2, 2}) /
               255.f);
  CHECK(label.item<int64_t>() == 2);
  auto batched = collect(ds.batch(2));
  CHECK(std::get<0>(batched[0]).shape() == tpf::Shape{2, 1, 2, 2});
  CHECK(std::get<1>(batched[0]).to_vector<int64_t>() ==
        std::vector<int64_t>{7, 2});
  CHECK_THROWS_AS(data::mnist(dir / "nowhere", "train"), tpf::IOError);
}

TEST_CASE("TFRecordDataset: records written by TFRecordWriter") {
  TempDir dir;
  const std::vector<std::pair<std::string, std::string>> kinds = {
      {"", "plain"}, {"GZIP", "gz"}, {"ZLIB", "z"}};
  for (const auto& [type, ext] : kinds) {
    const auto c = tpf::io::parse_compression(type, "test");
    for (int f = 0; f < 2; ++f) {
      // Appended piecewise: g++ 12 sees a false -Wrestrict in "r" + ... + ext.
      std::string file = "r";
      file += std::to_string(f);
      file += ".";
      file += ext;
      tpf::io::TFRecordWriter w(dir / file, c);
      for (int i = 0; i < 3; ++i) {
        const std::string name = {'r', 'e', 'c', char('0' + f), char('0' + i)};
        w.write(name);
      }
      w.write("");  // an empty record is still a record
      w.close();
    }
    auto ds =
        data::TFRecordDataset({dir / ("r0." + ext), dir / ("r1." + ext)}, type);
    CHECK(collect(ds) == std::vector<std::string>{"rec00", "rec01", "rec02", "",
                                                  "rec10", "rec11", "rec12",
                                                  ""});
    // A file's record count is only known by reading it.
    CHECK(ds.cardinality() == data::kUnknownCardinality);
  }

  // A flipped data byte fails record 1's CRC; ignore_errors drops the rest
  // of that file and goes on with the next.
  std::ifstream in(dir / "r0.plain", std::ios::binary);
  std::string bytes{std::istreambuf_iterator<char>(in), {}};
  bytes[8 + 4 + 5 + 4 + 8 + 4 + 2] ^= 1;  // record 1 = "rec01", data byte 2
  spit(dir / "bad.plain", bytes);
  auto it = data::TFRecordDataset(dir / "bad.plain").make_iterator();
  CHECK(*it.get_next() == "rec00");
  throws_with<tpf::DataLossError>(
      [&] { it.get_next(); },
      {"[TFRecordReader]", dir / "bad.plain", "at byte"});
  CHECK(collect(data::TFRecordDataset({dir / "bad.plain", dir / "r1.plain"})
                    .ignore_errors()) ==
        std::vector<std::string>{"rec00", "rec10", "rec11", "rec12", ""});
  CHECK_THROWS_AS(data::TFRecordDataset(dir / "r0.plain", "BZIP2"),
                  tpf::ValueError);
}

TEST_CASE("TFRecordDataset of Examples: batch, then parse_example") {
  TempDir dir;
  {
    tpf::io::TFRecordWriter w(dir / "ex.tfrecord");
    for (int64_t i = 0; i < 5; ++i)
      w.write(tpf::io::serialize_example(
          {{"x", std::vector<float>{float(i), float(2 * i)}},
           {"y", std::vector<int64_t>{i % 2}}}));
  }
  const tpf::io::FeatureSpecs spec = {
      {"x", tpf::io::FixedLenFeature{tpf::float32, {2}}},
      {"y", tpf::io::FixedLenFeature{tpf::int64, {}}}};
  auto ds = data::TFRecordDataset(dir / "ex.tfrecord")
                .batch(2)
                .map([&spec](const std::vector<std::string>& records) {
                  auto parsed = tpf::io::parse_example(records, spec);
                  return std::tuple{parsed.dense.at("x"), parsed.dense.at("y")};
                })
                .prefetch(2);
  auto batches = collect(ds);
  REQUIRE(batches.size() == 3);
  CHECK_CLOSE(std::get<0>(batches[1]), tpf::tensor({{2.f, 4.f}, {3.f, 6.f}}));
  CHECK(std::get<1>(batches[1]).to_vector<int64_t>() ==
        std::vector<int64_t>{0, 1});
  CHECK(std::get<0>(batches[2]).shape() == tpf::Shape{1, 2});
}
