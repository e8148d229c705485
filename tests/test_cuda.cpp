// The CUDA backend against the CPU: every kernel it registers, on contiguous,
// broadcast and strided operands, gradients through GPU ops, device memory.
// Skips (exit 77) where no GPU is present.
#define DOCTEST_CONFIG_IMPLEMENT
#include <iostream>
#include <sstream>

#include "support/check.hpp"

namespace {

const tpf::Device gpu = tpf::Device::cuda(0);

bool has_gpu() {
  static const bool present = [] {
    try {
      (void)tpf::zeros({1}, tpf::float32, gpu);
      return true;
    } catch (const tpf::DeviceError&) {
      return false;
    }
  }();
  return present;
}

using Fn = testing::Fn;
using Ts = std::vector<tpf::Tensor>;

/** f on the GPU agrees with f on the CPU for the same inputs. */
void check_parity(const char* name, const Fn& f, const Ts& inputs,
                  double rtol = 1e-5) {
  Ts on_gpu;
  for (const auto& x : inputs) on_gpu.push_back(x.to(gpu));
  const tpf::Tensor want = f(inputs), got = f(on_gpu);
  CHECK_MESSAGE(got.device() == gpu, name);
  const std::string why = testing::mismatch(got.cpu(), want, rtol, 1e-6);
  CHECK_MESSAGE(why.empty(), name << ": " << why);
}

}  // namespace

TEST_CASE("elementwise kernels match the CPU" * doctest::skip(!has_gpu())) {
  for (auto dtype : {tpf::float32, tpf::float64}) {
    const auto x = testing::uniform64({4, 5}).cast(dtype);
    const auto p = testing::uniform64({4, 5}, 0.5, 2.0).cast(dtype);
    const auto row = testing::uniform64({5}).cast(dtype);
    const auto col = testing::uniform64({4, 1}).cast(dtype);
    check_parity("exp", [](const Ts& v) { return tpf::exp(v[0]); }, {x});
    check_parity("log", [](const Ts& v) { return tpf::log(v[0]); }, {p});
    check_parity("expm1 log1p erf",
                 [](const Ts& v) {
                   return tpf::expm1(v[0]) + tpf::log1p(v[1]) + tpf::erf(v[0]);
                 },
                 {x, p});
    check_parity("sqrt rsqrt",
                 [](const Ts& v) { return tpf::sqrt(v[0]) + tpf::rsqrt(v[0]); },
                 {p});
    check_parity("trig",
                 [](const Ts& v) {
                   return tpf::sin(v[0]) * tpf::cos(v[0]) + tpf::tanh(v[0]);
                 },
                 {x});
    check_parity(
        "sigmoid relu",
        [](const Ts& v) { return tpf::sigmoid(v[0]) - tpf::relu(v[0]); }, {x});
    check_parity("abs sign square neg",
                 [](const Ts& v) {
                   return tpf::abs(v[0]) * tpf::sign(v[0]) + tpf::square(v[0]) -
                          v[0];
                 },
                 {x});
    check_parity("broadcast arithmetic",
                 [](const Ts& v) {
                   return (v[0] + v[1]) * v[2] / (v[1] * v[1] + 1.0) -
                          tpf::pow(v[3], v[1]);
                 },
                 {x, row, col, p});
    check_parity("min max where",
                 [](const Ts& v) {
                   return tpf::where(v[0] > v[1], tpf::minimum(v[0], v[2]),
                                     tpf::maximum(v[1], v[2]));
                 },
                 {x, row, col});
    check_parity("strided",
                 [](const Ts& v) {
                   return tpf::transpose(v[0]) * 2.0 + tpf::transpose(v[1]);
                 },
                 {x, p});
    check_parity("casts",
                 [](const Ts& v) {
                   return (v[0] > v[1]).cast(tpf::float32) +
                          v[0].cast(tpf::int32).cast(tpf::float32);
                 },
                 {x * 4.0, row});
  }
  check_parity(
      "integers and logic",
      [](const Ts& v) { return ((v[0] * 3 - v[1]) > v[1]) || !(v[0] == v[1]); },
      {tpf::tensor({1, 5, -2}), tpf::tensor({int32_t{4}})});
  CHECK(tpf::zeros({3}, tpf::int64, gpu).cpu().to_vector<int64_t>() ==
        std::vector<int64_t>{0, 0, 0});
}

TEST_CASE("reductions and matmul match the CPU" * doctest::skip(!has_gpu())) {
  for (auto dtype : {tpf::float32, tpf::float64}) {
    const auto x = testing::uniform64({3, 4, 50}).cast(dtype);
    check_parity(
        "sum",
        [](const Ts& v) {
          return tpf::sum(v[0], {0, 2});
        },
        {x}, 1e-4);
    check_parity(
        "mean all", [](const Ts& v) { return tpf::mean(v[0]); }, {x}, 1e-4);
    check_parity(
        "max min",
        [](const Ts& v) { return tpf::max(v[0], {1}) - tpf::min(v[0], {1}); },
        {x});
    check_parity(
        "prod", [](const Ts& v) { return tpf::prod(v[0] * 0.1 + 1.0, {2}); },
        {x}, 1e-4);
    const auto a = testing::uniform64({2, 3, 40, 30}).cast(dtype);
    const auto b = testing::uniform64({3, 30, 20}).cast(dtype);
    check_parity(
        "batched broadcast matmul",
        [](const Ts& v) { return tpf::matmul(v[0], v[1]); }, {a, b}, 1e-4);
    const auto c = testing::uniform64({64, 48}).cast(dtype);
    const auto d = testing::uniform64({20, 64}).cast(dtype);
    check_parity(
        "transposed matmul",
        [](const Ts& v) { return tpf::matmul(v[0], v[1], true, true); }, {c, d},
        1e-4);
  }
  const auto big = tpf::random_uniform({1 << 20});
  check_parity(
      "sum 1M", [](const Ts& v) { return tpf::sum(v[0]); }, {big}, 1e-4);
}

TEST_CASE("gradients through GPU ops match the CPU" *
          doctest::skip(!has_gpu())) {
  const Fn loss = [](const Ts& v) {
    return tpf::mean(tpf::square(tpf::tanh(tpf::matmul(v[0], v[1])) - v[2]));
  };
  const Ts inputs = {testing::uniform64({8, 5}), testing::uniform64({5, 3}),
                     testing::uniform64({8, 3})};
  auto grads = [&](const Ts& in) {
    tpf::GradientTape tape;
    for (const auto& t : in) tape.watch(t);
    return tape.gradient(loss(in), in);
  };
  Ts on_gpu;
  for (const auto& x : inputs) on_gpu.push_back(x.to(gpu));
  const Ts want = grads(inputs), got = grads(on_gpu);
  for (size_t i = 0; i < want.size(); ++i) {
    CHECK(got[i].device() == gpu);
    CHECK_CLOSE(got[i].cpu(), want[i], 1e-9, 1e-12);
  }
}

TEST_CASE(
    "device memory is cached and counted; ops without a kernel soft-place" *
    doctest::skip(!has_gpu())) {
  tpf::empty_cache(gpu);
  { const auto t = tpf::ones({1 << 20}, tpf::float32, gpu); }
  const auto s = tpf::memory_stats(gpu);
  CHECK(s.cached_bytes >= (size_t{4} << 20));
  { const auto t = tpf::ones({1 << 20}, tpf::float32, gpu); }
  CHECK(tpf::memory_stats(gpu).num_fresh == s.num_fresh);

  std::ostringstream captured;
  auto* old = std::cerr.rdbuf(captured.rdbuf());
  tpf::config::log_device_placement(true);
  const auto x = tpf::tensor({{1.0, 7.0}, {9.0, 2.0}}).to(gpu);
  const auto y = x * x;
  const auto am = tpf::argmax(y, 1);
  tpf::config::log_device_placement(false);
  std::cerr.rdbuf(old);
  CHECK(captured.str().find("mul -> cuda:0 (cuda)") != std::string::npos);
  CHECK(captured.str().find("argmax -> cpu:0 (xsimd, soft placement)") !=
        std::string::npos);
  CHECK(am.device() == gpu);
  CHECK(am.cpu().to_vector<int64_t>() == std::vector<int64_t>{1, 0});
}

int main(int argc, char** argv) {
  doctest::Context context(argc, argv);
  const int rc = context.run();
  if (context.shouldExit()) return rc;
  return rc ? rc : (has_gpu() ? 0 : 77);  // 77: meson's SKIP
}
