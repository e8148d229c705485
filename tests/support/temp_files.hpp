#pragma once
// Scratch files, and compressed content for them, for the tests that read
// and write real files.
#include <doctest/doctest.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

namespace testing {

/** A fresh directory, unique per process and instance, removed at scope exit.
 */
struct TempDir {
  std::filesystem::path path;
  TempDir() {
    static int n = 0;
    path = std::filesystem::temp_directory_path() /
           ("tpf_test_" + std::to_string(getpid()) + "_" + std::to_string(n++));
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string str() const { return path.string(); }
  std::string operator/(const std::string& name) const {
    return (path / name).string();
  }
};

/** n bytes of a fixed pseudo-random stream per seed. */
inline std::string random_bytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::string s(n, '\0');
  for (auto& ch : s) ch = static_cast<char>(rng());
  return s;
}

/** The whole file as bytes. */
inline std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

/** Replaces the file's content with `bytes`. */
inline void spit(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

/** `bytes` deflated with a GZIP (window_bits 31) or ZLIB (15) wrapper. */
inline std::string deflate_bytes(const std::string& bytes, int window_bits) {
  z_stream zs{};
  REQUIRE(deflateInit2(&zs, Z_BEST_COMPRESSION, Z_DEFLATED, window_bits, 8,
                       Z_DEFAULT_STRATEGY) == Z_OK);
  std::string out(deflateBound(&zs, bytes.size()), '\0');
  zs.next_in =
      reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));  // zlib API
  zs.avail_in = static_cast<uInt>(bytes.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  REQUIRE(deflate(&zs, Z_FINISH) == Z_STREAM_END);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}
inline std::string gzip(const std::string& bytes) {
  return deflate_bytes(bytes, 31);
}
inline std::string zlib(const std::string& bytes) {
  return deflate_bytes(bytes, 15);
}

/** The "ckpt-..." files of `dir` (its state file "checkpoint" left out). */
inline std::vector<std::string> checkpoint_files(
    const std::filesystem::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().filename().string().rfind("ckpt-", 0) == 0)
      out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace testing
