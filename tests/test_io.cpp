// tpf::io: .npz round trips and validation, IDX files and MNIST loading.
// Checkpoints (and the crash test) are in test_checkpoint.cpp.
#include <unistd.h>
#include <zip.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>

#include "support/check.hpp"
#include "support/temp_files.hpp"

namespace fs = std::filesystem;

using testing::slurp;
using testing::spit;
using testing::TempDir;

namespace {

/** An archive whose members hold the given raw bytes (made with libzip). */
void write_raw_zip(const std::string& path,
                   const std::vector<std::pair<std::string, std::string>>& m) {
  int err = 0;
  zip_t* za = zip_open(path.c_str(), ZIP_CREATE | ZIP_TRUNCATE, &err);
  REQUIRE(za != nullptr);
  for (const auto& [name, bytes] : m) {
    zip_source_t* src = zip_source_buffer(za, bytes.data(), bytes.size(), 0);
    REQUIRE(zip_file_add(za, name.c_str(), src, 0) >= 0);
  }
  REQUIRE(zip_close(za) == 0);
}

/** .npy bytes: magic, version 1.0, `dict` as given (unpadded), `data`. */
std::string npy(const std::string& dict, const std::string& data,
                std::string magic = std::string("\x93NUMPY\x01\x00", 8)) {
  std::string h = dict + "\n";
  std::string out = magic;
  out += static_cast<char>(h.size() & 0xff);
  out += static_cast<char>(h.size() >> 8);
  return out + h + data;
}

/** Checks that load_npz throws IOError whose message names every `part`. */
void check_io_error(const std::string& path,
                    const std::vector<std::string>& parts) {
  try {
    tpf::io::load_npz(path);
    FAIL("expected IOError for " << path);
  } catch (const tpf::IOError& e) {
    const std::string msg = e.what();
    CHECK_MESSAGE(msg.rfind("[load_npz] expected", 0) == 0, msg);
    for (const auto& p : parts)
      CHECK_MESSAGE(msg.find(p) != std::string::npos, (msg + " lacks " + p));
  }
}

}  // namespace

TEST_CASE("save_npz / load_npz round-trip every dtype, in order") {
  TempDir dir;
  const auto f32 = tpf::reshape(tpf::arange(0.f, 6.f), {2, 3});
  const auto t = tpf::transpose(f32, {1, 0});  // non-contiguous
  REQUIRE_FALSE(t.is_contiguous());
  const tpf::io::NamedTensors named = {
      {"w", f32},
      {"t", t},
      {"f64", tpf::tensor({1.0 / 3, -2e300})},
      {"i32", tpf::tensor({-7, 2147483647})},
      {"i64", tpf::tensor<int64_t>({-9007199254740993LL, 5})},
      {"mask", tpf::tensor({true, false})},
      {"scalar", tpf::scalar(-1.5, tpf::float64)},
      {"empty", tpf::zeros({0, 4}, tpf::int32)},
      {"conv1/kernel", tpf::ones({2, 1, 3, 3})},
  };
  for (bool compressed : {false, true}) {
    const std::string path = dir / "a.npz";
    tpf::io::save_npz(path, named, compressed);
    const auto back = tpf::io::load_npz(path);
    REQUIRE(back.size() == named.size());
    for (size_t i = 0; i < named.size(); ++i) {
      CAPTURE(named[i].first);
      CHECK(back[i].first == named[i].first);
      const auto& a = named[i].second;
      const auto& b = back[i].second;
      CHECK(b.dtype() == a.dtype());
      CHECK(b.shape() == a.shape());
      CHECK(b.is_contiguous());
      CHECK(b.to_vector<double>() == a.to_vector<double>());
      // int64 exactly (past 2^53, where doubles round).
      if (!tpf::is_floating(a.dtype()))
        CHECK(b.to_vector<int64_t>() == a.to_vector<int64_t>());
    }
    // Nothing but the archive is left in the directory.
    CHECK(std::distance(fs::directory_iterator(dir.path),
                        fs::directory_iterator()) == 1);
  }
  // The map overloads.
  tpf::io::save_npz(dir / "m.npz",
                    std::map<std::string, tpf::Tensor>{{"b", tpf::ones({2})},
                                                       {"a", tpf::zeros({1})}});
  const auto m = tpf::io::load_npz_map(dir / "m.npz");
  CHECK(m.size() == 2);
  CHECK(m.at("b").to_vector<float>() == std::vector<float>{1, 1});
}

TEST_CASE("save_npz writes .npy 1.0 members with a 64-byte aligned header") {
  TempDir dir;
  tpf::io::save_npz(dir / "h.npz", {{"x", tpf::zeros({2, 3})}});
  int err = 0;
  zip_t* za = zip_open((dir / "h.npz").c_str(), ZIP_RDONLY, &err);
  REQUIRE(za != nullptr);
  zip_stat_t st;
  REQUIRE(zip_stat(za, "x.npy", 0, &st) == 0);
  CHECK(st.comp_method == ZIP_CM_STORE);
  std::string bytes(st.size, '\0');
  zip_file_t* f = zip_fopen(za, "x.npy", 0);
  REQUIRE(zip_fread(f, bytes.data(), st.size) ==
          static_cast<zip_int64_t>(st.size));
  zip_fclose(f);
  zip_discard(za);
  CHECK(bytes.compare(0, 8, std::string("\x93NUMPY\x01\x00", 8)) == 0);
  const size_t hlen = static_cast<unsigned char>(bytes[8]) |
                      (static_cast<unsigned char>(bytes[9]) << 8);
  CHECK((10 + hlen) % 64 == 0);
  const std::string dict =
      "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
  CHECK(bytes.compare(10, dict.size(), dict) == 0);
  CHECK(bytes.find_first_not_of(' ', 10 + dict.size()) == 10 + hlen - 1);
  CHECK(bytes[10 + hlen - 1] == '\n');
  CHECK(st.size == 10 + hlen + 24);
}

TEST_CASE("save_npz rejects bad input and leaves no temporary file") {
  TempDir dir;
  CHECK_THROWS_AS(tpf::io::save_npz(dir / "a.npz", {{"x", tpf::ones({1})},
                                                    {"x", tpf::ones({1})}}),
                  tpf::ValueError);
  CHECK_THROWS_AS(tpf::io::save_npz(dir / "a.npz", {{"", tpf::ones({1})}}),
                  tpf::ValueError);
  CHECK_THROWS_AS(tpf::io::save_npz(dir / "a.npz", {{"x", tpf::Tensor()}}),
                  tpf::ValueError);
  CHECK_THROWS_AS(
      tpf::io::save_npz(dir / "no/such/dir/a.npz", {{"x", tpf::ones({1})}}),
      tpf::IOError);
  CHECK(fs::is_empty(dir.path));
  // Overwriting replaces the archive as a whole.
  tpf::io::save_npz(dir / "a.npz", {{"x", tpf::ones({3})}});
  tpf::io::save_npz(dir / "a.npz", {{"y", tpf::zeros({2})}});
  const auto back = tpf::io::load_npz(dir / "a.npz");
  REQUIRE(back.size() == 1);
  CHECK(back[0].first == "y");
}

TEST_CASE("save_npz: names zip cannot store are ValueErrors") {
  TempDir dir;
  const std::string path = dir / "n.npz";
  // Entry names are name + ".npy", at most 65535 bytes (16-bit length).
  const std::string longest(65531, 'a');
  tpf::io::save_npz(path, {{longest, tpf::ones({2})}, {"b", tpf::zeros({1})}});
  auto back = tpf::io::load_npz(path);
  REQUIRE(back.size() == 2);
  CHECK(back[0].first == longest);
  CHECK(back[1].first == "b");
  CHECK_THROWS_WITH_AS(
      tpf::io::save_npz(path, {{std::string(65532, 'a'), tpf::ones({1})}}),
      doctest::Contains("[save_npz] expected array names of at most 65531 "
                        "bytes"),
      tpf::ValueError);
  CHECK_THROWS_WITH_AS(
      tpf::io::save_npz(path, {{std::string(70000, 'a'), tpf::ones({1})}}),
      doctest::Contains("got 70000 bytes"), tpf::ValueError);
  CHECK_THROWS_WITH_AS(
      tpf::io::save_npz(path, {{std::string("ab\0cd", 5), tpf::ones({1})}}),
      doctest::Contains("[save_npz] expected array names without NUL bytes, "
                        "got a NUL at byte 2"),
      tpf::ValueError);
  CHECK_THROWS_AS(
      tpf::io::save_npz(path, {{std::string("\0", 1), tpf::ones({1})}}),
      tpf::ValueError);
  // The refused saves left the archive and no temporary file behind.
  CHECK(tpf::io::load_npz(path).size() == 2);
  CHECK(std::distance(fs::directory_iterator(dir.path),
                      fs::directory_iterator()) == 1);
}

TEST_CASE("save_npz of no arrays writes an empty archive, as np.savez") {
  TempDir dir;
  const std::string path = dir / "e.npz";
  tpf::io::save_npz(path, {});
  CHECK(tpf::io::load_npz(path).empty());
  CHECK(tpf::io::load_npz_map(path).empty());
  // What Python's zipfile writes: the 22-byte end of central directory.
  CHECK(slurp(path) == std::string("PK\x05\x06") + std::string(18, '\0'));
  // It replaces an archive atomically, leaving no temporary file.
  tpf::io::save_npz(path, {{"x", tpf::ones({3})}});
  tpf::io::save_npz(path, {}, true);
  CHECK(tpf::io::load_npz(path).empty());
  CHECK(std::distance(fs::directory_iterator(dir.path),
                      fs::directory_iterator()) == 1);
  CHECK_THROWS_AS(tpf::io::save_npz(dir / "no/such/dir/e.npz", {}),
                  tpf::IOError);
}

TEST_CASE("load_npz: malformed archives and members are IOErrors") {
  TempDir dir;
  const std::string f4 = std::string(8, '\0');  // two float32 zeros
  const std::string ok =
      "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }";
  check_io_error(dir / "missing.npz", {dir / "missing.npz"});
  spit(dir / "garbage.npz", "this is not a zip archive at all, no no no");
  check_io_error(dir / "garbage.npz", {dir / "garbage.npz"});
  spit(dir / "empty.npz", "");
  check_io_error(dir / "empty.npz", {dir / "empty.npz"});

  struct Case {
    std::string what;
    std::string member;
    std::string expect;
  };
  const std::vector<Case> cases = {
      {"bad magic", npy(ok, f4, std::string("\x93NUMPX\x01\x00", 8)), "magic"},
      {"version", npy(ok, f4, std::string("\x93NUMPY\x09\x00", 8)), "version"},
      {"fortran order",
       npy("{'descr': '<f4', 'fortran_order': True, 'shape': (2,), }", f4),
       "fortran_order"},
      {"unsupported dtype",
       npy("{'descr': '<u2', 'fortran_order': False, 'shape': (4,), }", f4),
       "'<u2'"},
      {"big endian",
       npy("{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", f4),
       "'>f4'"},
      {"object dtype",
       npy("{'descr': '|O', 'fortran_order': False, 'shape': (2,), }", f4),
       "'|O'"},
      {"shape vs bytes",
       npy("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", f4),
       "expected 12 bytes of data"},
      {"too many bytes",
       npy("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }", f4),
       "expected 4 bytes of data"},
      {"garbled header",
       npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2, }", f4),
       "header"},
      {"garbled shape",
       npy("{'descr': '<f4', 'fortran_order': False, 'shape': (-2,), }", f4),
       "shape"},
      {"missing key", npy("{'descr': '<f4', 'shape': (2,), }", f4),
       "'fortran_order'"},
      {"unknown key",
       npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), "
           "'x': 1}",
           f4),
       "'x'"},
      {"huge shape",
       npy("{'descr': '<f8', 'fortran_order': False, 'shape': "
           "(100000000000000, 100000000000000), }",
           f4),
       "2^62"},
      {"rank 9",
       npy("{'descr': '<f4', 'fortran_order': False, 'shape': "
           "(1,1,1,1,1,1,1,1,1), }",
           f4),
       "rank"},
      {"short member", std::string("\x93NUM", 4), "magic"},
      {"header length past the end",
       std::string("\x93NUMPY\x01\x00\xff\x7f{'descr'", 18), "header length"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.what);
    const std::string path = dir / "bad.npz";
    write_raw_zip(path, {{"good.npy", npy(ok, f4)}, {"arr.npy", c.member}});
    check_io_error(path, {path, "\"arr\"", c.expect});
  }
}

TEST_CASE("load_npz: every truncation and a flipped data byte are IOErrors") {
  TempDir dir;
  const std::string path = dir / "t.npz";
  tpf::io::save_npz(path, {{"a", tpf::random_uniform({50})},
                           {"b", tpf::arange<int64_t>(0, 20)}});
  const std::string bytes = slurp(path);
  REQUIRE(tpf::io::load_npz(path).size() == 2);
  for (size_t n = 0; n < bytes.size(); n += (n < 200 ? 1 : 13)) {
    CAPTURE(n);
    spit(dir / "cut.npz", bytes.substr(0, n));
    CHECK_THROWS_AS(tpf::io::load_npz(dir / "cut.npz"), tpf::IOError);
  }
  // A byte of "a"'s data (after its 128-byte .npy header): the CRC catches it.
  std::string flipped = bytes;
  const size_t npy_at = bytes.find("\x93NUMPY");
  REQUIRE(npy_at != std::string::npos);
  flipped[npy_at + 128 + 17] ^= 0x40;
  spit(dir / "flip.npz", flipped);
  check_io_error(dir / "flip.npz", {dir / "flip.npz", "\"a\""});
}

TEST_CASE(
    "load_npz: random byte mutations load or raise IOError, nothing else") {
  TempDir dir;
  std::mt19937 rng(7);
  for (bool compressed : {false, true}) {
    tpf::io::save_npz(dir / "base.npz",
                      {{"a", tpf::random_uniform({3, 5})},
                       {"mask", tpf::tensor({true, false})},
                       {"s", tpf::scalar(2.0, tpf::float64)}},
                      compressed);
    const std::string base = slurp(dir / "base.npz");
    int loaded = 0, rejected = 0;
    for (int it = 0; it < 400; ++it) {
      std::string m = base;
      for (int j = 0, k = 1 + rng() % 4; j < k; ++j)
        m[rng() % m.size()] ^= static_cast<char>(1 + rng() % 255);
      if (rng() % 5 == 0) m.resize(rng() % m.size());
      spit(dir / "m.npz", m);
      try {
        tpf::io::load_npz(dir / "m.npz");
        ++loaded;
      } catch (const tpf::IOError&) {
        ++rejected;
      }
    }
    CHECK(rejected > loaded);
  }
}

// --- IDX ---------------------------------------------------------------------

namespace {
std::string idx_bytes(uint8_t type, const std::vector<uint32_t>& dims,
                      const std::string& data) {
  std::string out = {0, 0, static_cast<char>(type),
                     static_cast<char>(dims.size())};
  for (uint32_t d : dims)
    for (int s = 24; s >= 0; s -= 8) out += static_cast<char>((d >> s) & 0xff);
  return out + data;
}
void write_gz(const std::string& path, const std::string& bytes) {
  gzFile f = gzopen(path.c_str(), "wb");
  REQUIRE(f != nullptr);
  REQUIRE(gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())) ==
          static_cast<int>(bytes.size()));
  REQUIRE(gzclose(f) == Z_OK);
}
void check_idx_error(const std::string& path, const std::string& part) {
  try {
    tpf::io::read_idx(path);
    FAIL("expected IOError for " << path);
  } catch (const tpf::IOError& e) {
    const std::string msg = e.what();
    CHECK_MESSAGE(msg.find(path) != std::string::npos, msg);
    CHECK_MESSAGE(msg.find(part) != std::string::npos,
                  (msg + " lacks " + part));
  }
}
}  // namespace

TEST_CASE("read_idx reads plain and gzipped IDX files") {
  TempDir dir;
  std::string pixels;
  for (int i = 0; i < 24; ++i) pixels += static_cast<char>(i * 11);
  const std::string images = idx_bytes(0x08, {2, 3, 4}, pixels);
  spit(dir / "img", images);
  write_gz(dir / "img.gz", images);
  for (const char* name : {"img", "img.gz"}) {
    const auto t = tpf::io::read_idx(dir / name);
    CHECK(t.dtype() == tpf::int32);
    CHECK(t.shape() == tpf::Shape{2, 3, 4});
    const auto v = t.to_vector<int>();
    CHECK(v[0] == 0);
    CHECK(v[23] == 253);
  }
  // Signed, short and float element types (big-endian on disk).
  CHECK(tpf::io::read_idx(
            (spit(dir / "s8", idx_bytes(0x09, {2}, "\xff\x05")), dir / "s8"))
            .to_vector<int>() == std::vector<int>{-1, 5});
  CHECK(tpf::io::read_idx(
            (spit(dir / "s16",
                  idx_bytes(0x0B, {2}, std::string("\xff\xfe\x01\x00", 4))),
             dir / "s16"))
            .to_vector<int>() == std::vector<int>{-2, 256});
  const auto f = tpf::io::read_idx(
      (spit(dir / "f32", idx_bytes(0x0D, {1}, std::string("\x3f\xc0\0\0", 4))),
       dir / "f32"));
  CHECK(f.dtype() == tpf::float32);
  CHECK(f.item<float>() == 1.5f);

  // Errors name the file and what was wrong.
  spit(dir / "magic", std::string("\x00\x01\x08\x01", 4) + "xxxx");
  check_idx_error(dir / "magic", "magic");
  spit(dir / "type", idx_bytes(0x07, {1}, "x"));
  check_idx_error(dir / "type", "magic");
  spit(dir / "dims", images.substr(0, 9));
  check_idx_error(dir / "dims", "truncated header");
  spit(dir / "cut", images.substr(0, images.size() - 1));
  check_idx_error(dir / "cut", "truncated");
  write_gz(dir / "cut.gz", images.substr(0, images.size() - 5));
  check_idx_error(dir / "cut.gz", "truncated");
  const std::string gz = slurp(dir / "img.gz");
  spit(dir / "gzcut.gz", gz.substr(0, gz.size() / 2));
  CHECK_THROWS_AS(tpf::io::read_idx(dir / "gzcut.gz"), tpf::IOError);
  // Every byte of data there, the gzip trailer (CRC and length) cut off.
  for (size_t cut : {size_t{1}, size_t{4}, size_t{8}}) {
    spit(dir / "trailer.gz", gz.substr(0, gz.size() - cut));
    check_idx_error(dir / "trailer.gz", "cut short");
  }
  spit(dir / "long", images + "x");
  check_idx_error(dir / "long", "got more");
  spit(dir / "huge", idx_bytes(0x0E, {60000, 60000, 60000}, "abc"));
  check_idx_error(dir / "huge", "2^40");
  // 8 bytes * 2^30 * 2^31 = 2^64: 0 bytes of data if multiplied unchecked.
  spit(dir / "wrap", idx_bytes(0x0E, {1u << 30, 1u << 31}, ""));
  check_idx_error(dir / "wrap", "2^40");
  check_idx_error(dir / "missing", "missing");
}

TEST_CASE("load_mnist scales images to [0, 1] and returns int64 labels") {
  TempDir dir;
  std::string pixels(3 * 28 * 28, '\0');
  pixels[0] = '\xff';
  pixels[28 * 28 + 1] = static_cast<char>(51);
  write_gz(dir / "train-images-idx3-ubyte.gz",
           idx_bytes(0x08, {3, 28, 28}, pixels));
  spit(dir / "train-labels-idx1-ubyte",
       idx_bytes(0x08, {3}, std::string("\x07\x00\x09", 3)));
  const auto d = tpf::io::load_mnist(dir.path.string(), "train");
  CHECK(d.images.dtype() == tpf::float32);
  CHECK(d.images.shape() == tpf::Shape{3, 1, 28, 28});
  const auto px = d.images.to_vector<float>();
  CHECK(px[0] == 1.f);
  CHECK(px[28 * 28 + 1] == doctest::Approx(0.2f));
  CHECK(d.labels.dtype() == tpf::int64);
  CHECK(d.labels.to_vector<int64_t>() == std::vector<int64_t>{7, 0, 9});
  CHECK_THROWS_AS(tpf::io::load_mnist(dir.path.string(), "t10k"), tpf::IOError);
  CHECK_THROWS_AS(tpf::io::load_mnist(dir.path.string(), "validation"),
                  tpf::ValueError);
  spit(dir / "train-labels-idx1-ubyte",
       idx_bytes(0x08, {2}, std::string("\x07\x00", 2)));
  CHECK_THROWS_AS(tpf::io::load_mnist(dir.path.string(), "train"),
                  tpf::IOError);
}

TEST_CASE("load_mnist_bytes keeps bytes and converts batches of images") {
  TempDir dir;
  std::string pixels(3 * 28 * 28, '\0');
  pixels[28 * 28] = '\xff';
  pixels[2 * 28 * 28 + 5] = static_cast<char>(51);
  spit(dir / "t10k-images-idx3-ubyte", idx_bytes(0x08, {3, 28, 28}, pixels));
  spit(dir / "t10k-labels-idx1-ubyte",
       idx_bytes(0x08, {3}, std::string("\x07\x00\x09", 3)));
  const auto d = tpf::io::load_mnist_bytes(dir.path.string(), "test");
  CHECK(d.size() == 3);
  CHECK(d.pixels.size() == 3 * 28 * 28);
  CHECK(d.labels.to_vector<int64_t>() == std::vector<int64_t>{7, 0, 9});
  const auto range = d.images(1, 2);
  CHECK(range.shape() == tpf::Shape{2, 1, 28, 28});
  CHECK(range.to_vector<float>()[0] == 1.f);
  const auto picked = d.images(tpf::tensor<int64_t>({2, 2, 1}));
  CHECK(picked.shape() == tpf::Shape{3, 1, 28, 28});
  const auto px = picked.to_vector<float>();
  CHECK(px[5] == doctest::Approx(0.2f));
  CHECK(px[28 * 28 + 5] == doctest::Approx(0.2f));
  CHECK(px[2 * 28 * 28] == 1.f);
  CHECK_THROWS_AS(d.images(2, 2), tpf::IndexError);
  CHECK_THROWS_AS(d.images(tpf::tensor<int64_t>({3})), tpf::IndexError);
}

TEST_CASE("Fashion-MNIST from Debian's dataset-fashion-mnist") {
  if (!fs::exists(tpf::io::kDefaultMnistDir)) {
    MESSAGE("dataset-fashion-mnist is not installed: skipped");
    return;
  }
  for (const auto& [split, n] :
       {std::pair<std::string, int64_t>{"train", 60000}, {"t10k", 10000}}) {
    const auto d = tpf::io::load_mnist(tpf::io::kDefaultMnistDir, split);
    CHECK(d.images.shape() == tpf::Shape{n, 1, 28, 28});
    CHECK(d.labels.shape() == tpf::Shape{n});
    CHECK(tpf::min(d.labels).item<int64_t>() == 0);
    CHECK(tpf::max(d.labels).item<int64_t>() == 9);
    CHECK(tpf::min(d.images).item<float>() == 0.f);
    CHECK(tpf::max(d.images).item<float>() == 1.f);
  }
  const auto raw = tpf::io::read_idx(std::string(tpf::io::kDefaultMnistDir) +
                                     "/t10k-labels-idx1-ubyte.gz");
  CHECK(raw.dtype() == tpf::int32);
  CHECK(raw.shape() == tpf::Shape{10000});
}
