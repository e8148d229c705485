// What the OpCase tables cannot express about the CUDA backend: its caching
// allocator and memory statistics, and soft placement of an op it has no
// kernel for. Its kernels against the CPU (forward, strided, float32 and
// gradients) are every table's device pass (tests/support/check.cpp), which
// takes the GPU where one is present; TAPEFLOW_TEST_DEVICE=cuda makes that
// pass fail rather than fall back to the host-backed test device.
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

}  // namespace

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

TEST_CASE("random streams on the GPU are the CPU's" *
          doctest::skip(!has_gpu())) {
  for (tpf::DType dt : {tpf::float32, tpf::float64}) {
    CAPTURE(dt);
    // Uniform: bit for bit (no fused multiply-add on either side).
    tpf::manual_seed(9);
    const auto u = tpf::random_uniform({1 << 16}, -2.0, 5.0, dt, gpu);
    tpf::manual_seed(9);
    const auto u_cpu = tpf::random_uniform({1 << 16}, -2.0, 5.0, dt);
    CHECK(u.cpu().to_vector<double>() == u_cpu.to_vector<double>());
    // Normal: the GPU's log/cos against glibc's, a few ulp apart.
    const auto n =
        tpf::stateless_random_normal({1 << 16}, 3, 0.0, 1.0, dt, gpu);
    CHECK_CLOSE(n.cpu(),
                tpf::stateless_random_normal({1 << 16}, 3, 0.0, 1.0, dt),
                dt == tpf::float32 ? 1e-6 : 1e-14, 1e-14);
  }
  const auto x = tpf::ones({64, 64}, tpf::float32, gpu);
  const auto kept = tpf::nn::dropout(x, 0.25, true, {}, 21);
  CHECK(kept.device() == gpu);
  CHECK(kept.cpu().to_vector<float>() ==
        tpf::nn::dropout(tpf::ones({64, 64}), 0.25, true, {}, 21)
            .to_vector<float>());
}
