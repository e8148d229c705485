// Helper process for the io tests:
//   io_helper write <file.npz>   writes the arrays npz_numpy_check.py expects
//   io_helper check <file.npz>   verifies the arrays npz_numpy_check.py wrote
//   io_helper save-loop <dir>    saves checkpoints forever (killed by the test)
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>

#include "tapeflow/tapeflow.hpp"

namespace tpf = tapeflow;

namespace {

int write(const std::string& path) {
  const auto f32 = tpf::tensor({{0.5f, -1.25f, 3e-8f}, {1e30f, -0.0f, 7.f}});
  tpf::io::save_npz(
      path, {{"f32", f32},
             {"f64", tpf::tensor({M_PI, -M_E, 1e-300})},
             {"i32", tpf::tensor({std::numeric_limits<int32_t>::min(), 0,
                                  std::numeric_limits<int32_t>::max()})},
             {"i64", tpf::tensor<int64_t>({std::numeric_limits<int64_t>::min(),
                                           1, 9007199254740993LL})},
             {"b", tpf::tensor({true, false, true})},
             {"zero_d", tpf::scalar(2.5, tpf::float64)},
             {"cube", tpf::reshape(tpf::arange<int64_t>(0, 24), {2, 3, 4})},
             {"transposed", tpf::transpose(f32, {1, 0})},
             {"nested/name", tpf::zeros({0, 3})}});
  return 0;
}

int failures = 0;
template <class T>
void expect(const tpf::io::NamedTensors& got, size_t i, const char* name,
            tpf::DType dtype, const tpf::Shape& shape,
            const std::vector<T>& values) {
  if (i >= got.size()) {
    std::printf("missing array %zu (%s)\n", i, name);
    ++failures;
    return;
  }
  const auto& [n, t] = got[i];
  bool ok = n == name && t.dtype() == dtype && t.shape() == shape;
  if (ok) {
    const auto v = t.to_vector<T>();
    ok = v.size() == values.size() &&
         std::memcmp(v.data(), values.data(), v.size() * sizeof(T)) == 0;
  }
  if (!ok) {
    std::printf("array %zu: expected %s %s, got %s %s %s\n", i, name,
                shape.str().c_str(), n.c_str(), t.shape().str().c_str(),
                std::string(tpf::dtype_name(t.dtype())).c_str());
    ++failures;
  }
}

/** Values of tests/npz_numpy_check.py's np.savez call, in its order. */
int check(const std::string& path) {
  const auto got = tpf::io::load_npz(path);
  expect<float>(got, 0, "f32", tpf::float32, {2, 2}, {1.5f, -2.f, 3.f, 4e-7f});
  expect<double>(got, 1, "f64", tpf::float64, {2}, {M_PI, -1e300});
  expect<int32_t>(got, 2, "i32", tpf::int32, {2},
                  {std::numeric_limits<int32_t>::min(),
                   std::numeric_limits<int32_t>::max()});
  expect<int64_t>(got, 3, "i64", tpf::int64, {2},
                  {std::numeric_limits<int64_t>::min(),
                   std::numeric_limits<int64_t>::max()});
  expect<int32_t>(got, 4, "b", tpf::bool_, {3}, {1, 0, 1});
  expect<double>(got, 5, "zero_d", tpf::float64, {}, {-3.25});
  std::vector<int64_t> cube(24);
  for (int i = 0; i < 24; ++i) cube[i] = i - 12;
  expect<int64_t>(got, 6, "cube", tpf::int64, {2, 3, 4}, cube);
  if (got.size() != 7) {
    std::printf("expected 7 arrays, got %zu\n", got.size());
    ++failures;
  }
  return failures ? 1 : 0;
}

/** Step s saves w = s, b = s / 2, slot m = -s, RNG state {777, 3 s}. */
[[noreturn]] void save_loop(const std::string& dir) {
  tpf::Variable w(tpf::zeros({256, 1024}));
  tpf::Variable b(tpf::zeros({1000}, tpf::float64));
  tpf::Variable m(tpf::zeros({256, 1024}));
  tpf::train::Checkpoint ckpt({{"dense/kernel", w}, {"dense/bias", b}},
                              {{"dense/kernel/m", m}}, 2);
  if (auto latest = tpf::train::latest_checkpoint(dir); !latest.empty())
    ckpt.restore(latest);
  for (int64_t step = ckpt.step() + 1;; ++step) {
    w.assign(tpf::full(w.shape(), static_cast<double>(step)));
    b.assign(tpf::full(b.shape(), step * 0.5, tpf::float64));
    m.assign(tpf::full(m.shape(), -static_cast<double>(step)));
    tpf::set_rng_state({777, static_cast<uint64_t>(step) * 3});
    ckpt.set_step(step);
    ckpt.save(dir);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s write|check|save-loop PATH\n", argv[0]);
    return 2;
  }
  const std::string cmd = argv[1];
  try {
    if (cmd == "write") return write(argv[2]);
    if (cmd == "check") return check(argv[2]);
    if (cmd == "save-loop") save_loop(argv[2]);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  std::fprintf(stderr, "unknown command %s\n", cmd.c_str());
  return 2;
}
