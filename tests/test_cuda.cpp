// What the OpCase tables cannot express about the CUDA backend: its caching
// allocator and memory statistics, the placement log, the float32 matmul and
// convolution precision policy, copies through pinned staging and between GPUs,
// synchronization, deferred data errors, the placement log's GPU line and
// CUDA_VISIBLE_DEVICES. Its kernels against the CPU (forward, strided, float32
// and gradients) are every table's device pass (tests/support/check.cpp), which
// takes the GPU where one is present; TAPEFLOW_TEST_DEVICE=cuda makes that
// pass fail rather than fall back to the host-backed test device. Kernels
// the tables miss (optimizer updates, argmin, pooling's argmax and second
// order, singular inverses, one_hot's out-of-range rows) are
// test_cuda_ops.cpp's. Skips (exit 77) where no GPU
// is present.
#define DOCTEST_CONFIG_IMPLEMENT
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <regex>
#include <string>
#include <utility>
#include <vector>

#include "support/check.hpp"
#include "support/cuda_skip.hpp"
#include "support/device.hpp"

using testing::expect_error;
using testing::gpu;
using testing::has_gpu;

namespace {

/** TF_GPU_ALLOCATOR=cuda_malloc (the emulator's suites set it) caches
 * nothing; else the BFC arena serves. */
const std::string kAllocator = [] {
  const char* chosen = std::getenv("TF_GPU_ALLOCATOR");
  return chosen && *chosen ? chosen : "BFC";
}();

}  // namespace

TEST_CASE("device memory is cached and counted; placements are logged" *
          doctest::skip(!has_gpu())) {
  tpf::empty_cache(gpu);
  { const auto t = tpf::ones({1 << 20}, tpf::float32, gpu); }
  const auto s = tpf::memory_stats(gpu);
  { const auto t = tpf::ones({1 << 20}, tpf::float32, gpu); }
  if (kAllocator == "cuda_malloc") {
    CHECK(s.cached_bytes == 0);
    CHECK(tpf::memory_stats(gpu).num_fresh == s.num_fresh + 1);
  } else {
    CHECK(s.cached_bytes >= (size_t{4} << 20));
    CHECK(tpf::memory_stats(gpu).num_fresh == s.num_fresh);
  }

  // Every op has a CUDA kernel now; soft placement itself
  // is test_placement's (on the host-backed test device).
  tpf::Tensor am;
  const std::string log = testing::placement_log([&] {
    const auto x = tpf::tensor({{1.0, 7.0}, {9.0, 2.0}}).to(gpu);
    am = tpf::argmax(x * x, 1);
  });
  CHECK(log.find("mul -> cuda:0 (cuda)") != std::string::npos);
  CHECK(log.find("argmax -> cuda:0 (cuda)") != std::string::npos);
  CHECK(am.device() == gpu);
  CHECK(am.cpu().to_vector<int64_t>() == std::vector<int64_t>{1, 0});
}

namespace {

/** What this binary, run again with `env` set, writes to stdout and stderr. */
std::string run_child(const std::string& env) {
  char self[4096];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  REQUIRE(n > 0);
  self[n] = 0;
  // The child's output is its own: the placement log only where `env` asks.
  const std::string command =
      "env -u TF_FORCE_GPU_ALLOW_GROWTH -u TAPEFLOW_LOG_PLACEMENT " + env +
      " TAPEFLOW_TEST_CUDA_CHILD=1 '" + self + "' 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  REQUIRE(pipe != nullptr);
  std::string out;
  char buf[512];
  while (fgets(buf, sizeof buf, pipe)) out += buf;
  CHECK(pclose(pipe) == 0);
  return out;
}

/** Values 0, 1, 2, ... on the host, as a float32 tensor of n elements. */
tpf::Tensor counting(int64_t n) {
  return tpf::arange<int64_t>(0, n).cast(tpf::float32);
}

}  // namespace

TEST_CASE("copies to the GPU may free their source at once" *
          doctest::skip(!has_gpu())) {
  // 4 MiB goes through one pinned block, 80 MiB in 32 MiB chunks.
  for (const int64_t n : {int64_t{1} << 20, int64_t{20} << 20}) {
    CAPTURE(n);
    tpf::Tensor host = counting(n);
    const tpf::Tensor device = host.to(gpu);
    // Overwrite and free the source before the copy is waited for.
    float* p = host.data<float>();
    std::fill(p, p + n, -1.f);
    host = tpf::Tensor();
    const tpf::Tensor back = device.cpu();
    const std::vector<float> v = back.to_vector<float>();
    bool counts = true;
    for (int64_t i = 0; i < n; ++i) counts &= v[i] == float(i);
    CHECK(counts);
  }
  // Many small copies back to back: the staging blocks are reused only once
  // their DMA is done.
  std::vector<tpf::Tensor> on_gpu;
  for (int i = 0; i < 64; ++i)
    on_gpu.push_back((counting(1000) + double(i)).to(gpu));
  for (int i = 0; i < 64; ++i)
    CHECK(on_gpu[i].cpu().to_vector<float>()[999] == float(999 + i));
}

TEST_CASE("synchronize waits for the device's queued work" *
          doctest::skip(!has_gpu())) {
  const tpf::Tensor x = tpf::ones({int64_t{1} << 22}, tpf::float32, gpu);
  tpf::Tensor y = x;
  for (int i = 0; i < 20; ++i) y = y + x;
  CHECK_NOTHROW(tpf::synchronize(gpu));
  const std::vector<float> v = y.cpu().to_vector<float>();
  CHECK(std::all_of(v.begin(), v.end(), [](float e) { return e == 21.f; }));
}

TEST_CASE("a GPU copy between two GPUs is a peer copy" *
          doctest::skip(!has_gpu() ||
                        tpf::device_count(tpf::DeviceType::cuda) < 2)) {
  const tpf::Tensor a = counting(int64_t{1} << 22).to(gpu);
  const tpf::Tensor b = (a * 2.0).to(tpf::Device::cuda(1));
  CHECK(b.device() == tpf::Device::cuda(1));
  const std::vector<float> v = b.cpu().to_vector<float>();
  CHECK(v[12345] == 2.f * 12345.f);
  CHECK(v.back() == 2.f * float((int64_t{1} << 22) - 1));
}

TEST_CASE("a bad gather index is reported at the next synchronization" *
          doctest::skip(!has_gpu())) {
  const tpf::Tensor params = counting(10).to(gpu);
  const tpf::Tensor bad = tpf::tensor<int64_t>({1, 12, 3}).to(gpu);
  const std::string message =
      "[gather] expected indices in [0, 10), got 12 (on cuda:0, reported at "
      "synchronization)";
  tpf::Tensor out;
  CHECK_NOTHROW(out = tpf::gather(params, bad));  // the kernel cannot throw
  bool thrown = false;
  try {
    tpf::synchronize(gpu);
  } catch (const tpf::IndexError& e) {
    thrown = true;
    CHECK(std::string(e.what()) == message);
  }
  CHECK(thrown);
  CHECK_NOTHROW(tpf::synchronize(gpu));  // reported once
  // A copy to the host is a synchronization too.
  (void)tpf::gather(params, bad);
  expect_error<tpf::IndexError>([&] { (void)out.cpu(); }, message);
  // Good indices afterwards gather as usual.
  const tpf::Tensor good = tpf::tensor<int64_t>({9, 0}).to(gpu);
  CHECK(tpf::gather(params, good).cpu().to_vector<float>() ==
        std::vector<float>{9.f, 0.f});
}

TEST_CASE("the placement log has one line per GPU when its memory starts" *
          doctest::skip(!has_gpu())) {
  const std::string out = run_child("TAPEFLOW_LOG_PLACEMENT=1");
  const std::regex line(
      R"((^|\n)cuda:0: [^\n]+ \(sm_[0-9]+, ([0-9]+\.[0-9]) GiB\), limit )"
      R"(([0-9]+\.[0-9]) GiB \(fraction 1\.0\), allow_growth on, )" +
      kAllocator + "\n");
  std::smatch m;
  REQUIRE_MESSAGE(std::regex_search(out, m, line), out);
  CHECK(m[2] == m[3]);  // fraction 1.0: the limit is the whole memory
  size_t lines = 0;
  for (size_t at = out.find("cuda:0: "); at != std::string::npos;
       at = out.find("cuda:0: ", at + 1))
    ++lines;
  CHECK(lines == 1);
}

TEST_CASE("CUDA_VISIBLE_DEVICES=\"\" hides every GPU" *
          doctest::skip(!has_gpu())) {
  CHECK(run_child("CUDA_VISIBLE_DEVICES=") == "cuda devices: 0\n");
}

TEST_CASE("random streams on the GPU are the CPU's" *
          doctest::skip(!has_gpu())) {
  for (tpf::DType dt : {tpf::float32, tpf::float64}) {
    CAPTURE(dt);
    // Uniform: bit for bit (one fused multiply-add on either side).
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

namespace {

/** product() on the GPU under `precision`, back on the host. */
std::vector<float> under(const char* precision,
                         const std::function<tpf::Tensor()>& product) {
  tpf::config::set_float32_matmul_precision(precision);
  return product().cpu().to_vector<float>();
}

}  // namespace

TEST_CASE(
    "float32 matmul and convolution precision selects TF32 or bfloat16 on the "
    "GPU" *
    doctest::skip(!has_gpu())) {
  const char* override_tf32 = std::getenv("NVIDIA_TF32_OVERRIDE");
  if (override_tf32 && std::string(override_tf32) == "0") {
    MESSAGE("NVIDIA_TF32_OVERRIDE=0 keeps cuBLAS at float32: not checked");
    return;
  }
  // Positive terms: each sum's relative error is at most its products'
  // (2^-11 for TF32, 2^-8 for bfloat16), so 1e-2 holds for every element.
  // The convolution has 32 output channels: im2col and a cuBLAS GEMM.
  const auto uniform = [](const tpf::Shape& shape) {
    return tpf::random_uniform(shape, 0.0, 1.0, tpf::float32, gpu);
  };
  const auto a = uniform({256, 256}), b = uniform({256, 256});
  const auto x = uniform({4, 16, 12, 12}), w = uniform({32, 16, 5, 5});
  const std::vector<std::pair<std::string, std::function<tpf::Tensor()>>>
      products{{"matmul", [&] { return tpf::matmul(a, b); }},
               {"conv2d",
                [&] { return tpf::nn::conv2d(x, w, {.padding = "SAME"}); }}};
  const tpf::config::Float32Precision before =
      tpf::config::float32_matmul_precision();
  for (const auto& [name, product] : products) {
    const std::vector<float> exact = under("highest", product);
    for (const char* precision : {"high", "medium"}) {
      CAPTURE(name);
      CAPTURE(precision);
      const std::vector<float> fast = under(precision, product);
      double largest_difference = 0, largest_relative = 0;
      for (size_t i = 0; i < exact.size(); ++i) {
        const double d = std::abs(double(fast[i]) - double(exact[i]));
        largest_difference = std::max(largest_difference, d);
        largest_relative = std::max(largest_relative, d / std::abs(exact[i]));
      }
      CHECK(largest_difference > 1e-6);  // the mode took effect
      CHECK(largest_relative < 1e-2);
    }
  }
  // float64 products ignore the setting.
  const auto a64 = a.cast(tpf::float64), b64 = b.cast(tpf::float64);
  tpf::config::set_float32_matmul_precision("highest");
  const auto c64 = tpf::matmul(a64, b64).cpu();
  tpf::config::set_float32_matmul_precision("medium");
  CHECK_CLOSE(tpf::matmul(a64, b64).cpu(), c64, 1e-14, 0.0);
  tpf::config::set_float32_matmul_precision(before);
}

int main(int argc, char** argv) {
  // The child of run_child: its static initialization (has_gpu) has used
  // the GPU already; it reports what it saw and exits.
  if (std::getenv("TAPEFLOW_TEST_CUDA_CHILD")) {
    std::printf("cuda devices: %d\n", tpf::device_count(tpf::DeviceType::cuda));
    return 0;
  }
  doctest::Context context(argc, argv);
  const int rc = context.run();
  if (context.shouldExit()) return rc;
  return testing::gpu_test_exit_code(rc);
}
