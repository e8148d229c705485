// GEMM, n x n x n, through tapeflow (matmul -> cublasGemmStridedBatchedEx
// with the compute type of float32_matmul_precision) and through
// cublasGemmEx called directly with the same compute type, its own handle
// on its own non-blocking stream and a workspace of tapeflow's size (CUDA.md
// §7: tapeflow >= 0.95x raw at n >= 1024). Each iteration ends
// synchronized; the GFLOP counter is a rate.
#include <cublas_v2.h>

#include <cmath>
#include <vector>

#include "../bench_cases.hpp"
#include "bench_cuda.hpp"

namespace tpf = tapeflow;

namespace tapeflow_bench_cuda {
namespace {

/** One row of the table: dtype, tapeflow's setting, cuBLAS's compute type. */
struct Precision {
  const char* name;
  tpf::DType dtype;
  const char* setting;  // float32_matmul_precision (float64 ignores it)
  cublasComputeType_t compute;
};
const Precision kPrecisions[] = {
    {"f32_highest", tpf::float32, "highest", CUBLAS_COMPUTE_32F},
    {"f32_high", tpf::float32, "high", CUBLAS_COMPUTE_32F_FAST_TF32},
    {"f32_medium", tpf::float32, "medium", CUBLAS_COMPUTE_32F_FAST_16BF},
    {"f64", tpf::float64, "highest", CUBLAS_COMPUTE_64F},
};

/** Sets float32_matmul_precision for one case and restores it after. */
struct PrecisionScope {
  tpf::config::Float32Precision saved = tpf::config::float32_matmul_precision();
  explicit PrecisionScope(const char* setting) {
    tpf::config::set_float32_matmul_precision(setting);
  }
  ~PrecisionScope() { tpf::config::set_float32_matmul_precision(saved); }
};

/**
 * Whether c[0][0] is a[0, :] . b[:, 0] to within bfloat16's rounding of the
 * inputs (2^-8 of the terms' magnitudes): catches a wrong layout or a
 * product that never ran, at any precision.
 */
bool corner_ok(const tpf::Tensor& a, const tpf::Tensor& b,
               const tpf::Tensor& c) {
  const auto row = tpf::slice(a, {0, 0}, {1, -1})
                       .cpu()
                       .cast(tpf::float64)
                       .to_vector<double>();
  const auto col = tpf::slice(b, {0, 0}, {-1, 1})
                       .cpu()
                       .cast(tpf::float64)
                       .to_vector<double>();
  double exact = 0, magnitude = 0;
  for (size_t k = 0; k < row.size(); ++k) {
    exact += row[k] * col[k];
    magnitude += std::abs(row[k] * col[k]);
  }
  const double got =
      tpf::slice(c, {0, 0}, {1, 1}).cpu().cast(tpf::float64).item<double>();
  return std::abs(got - exact) <= 1e-2 * magnitude;
}

void gemm_tapeflow(benchmark::State& state, Precision p, int64_t n) {
  const PrecisionScope scope(p.setting);
  tpf::manual_seed(42);
  const auto a = tpf::random_uniform({n, n}, -1.0, 1.0, p.dtype, gpu0);
  const auto b = tpf::random_uniform({n, n}, -1.0, 1.0, p.dtype, gpu0);
  if (!corner_ok(a, b, tpf::matmul(a, b))) {  // also the warm-up
    state.SkipWithError("matmul: wrong c[0][0]");
    return;
  }
  for (auto _ : state) {
    benchmark::DoNotOptimize(tpf::matmul(a, b));
    tpf::synchronize(gpu0);
  }
  tfbench::set_matmul_flops(state, n);
}

/** A cuBLAS handle on its own stream with a 32 MiB workspace (tapeflow's). */
struct RawBlas {
  cublasHandle_t handle = nullptr;
  cudaStream_t stream = nullptr;
  void* workspace = nullptr;
  void* c = nullptr;
  ~RawBlas() {
    if (handle) cublasDestroy(handle);
    if (stream) cudaStreamDestroy(stream);
    cudaFree(workspace);
    cudaFree(c);
  }
  bool make(benchmark::State& state, size_t c_bytes) {
    constexpr size_t kWorkspace = size_t{32} << 20;
    if (failed(state, cudaSetDevice(0), "cudaSetDevice") ||
        failed(state, cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking),
               "cudaStreamCreate") ||
        failed(state, cudaMalloc(&workspace, kWorkspace), "cudaMalloc") ||
        failed(state, cudaMalloc(&c, c_bytes), "cudaMalloc"))
      return false;
    if (cublasCreate(&handle) != CUBLAS_STATUS_SUCCESS ||
        cublasSetStream(handle, stream) != CUBLAS_STATUS_SUCCESS ||
        cublasSetWorkspace(handle, workspace, kWorkspace) !=
            CUBLAS_STATUS_SUCCESS) {
      state.SkipWithError("cublas: handle set-up failed");
      return false;
    }
    return true;
  }
};

void gemm_raw(benchmark::State& state, Precision p, int64_t n) {
  tpf::manual_seed(42);
  const auto a = tpf::random_uniform({n, n}, -1.0, 1.0, p.dtype, gpu0);
  const auto b = tpf::random_uniform({n, n}, -1.0, 1.0, p.dtype, gpu0);
  tpf::synchronize(gpu0);  // the inputs are written on tapeflow's stream
  const bool f64 = p.dtype == tpf::float64;
  RawBlas raw;
  if (!raw.make(state, size_t(n * n) * (f64 ? 8 : 4))) return;
  const cudaDataType type = f64 ? CUDA_R_64F : CUDA_R_32F;
  const float one_f = 1.f, zero_f = 0.f;
  const double one_d = 1.0, zero_d = 0.0;
  const void* one = f64 ? static_cast<const void*>(&one_d) : &one_f;
  const void* zero = f64 ? static_cast<const void*>(&zero_d) : &zero_f;
  const int m = static_cast<int>(n);
  const auto gemm = [&] {
    return cublasGemmEx(raw.handle, CUBLAS_OP_N, CUBLAS_OP_N, m, m, m, one,
                        b.raw_data(), type, m, a.raw_data(), type, m, zero,
                        raw.c, type, m, p.compute, CUBLAS_GEMM_DEFAULT);
  };
  if (gemm() != CUBLAS_STATUS_SUCCESS) {  // also the warm-up
    state.SkipWithError("cublasGemmEx failed");
    return;
  }
  for (auto _ : state) {
    gemm();
    if (failed(state, cudaStreamSynchronize(raw.stream), "gemm")) return;
  }
  tfbench::set_matmul_flops(state, n);
}

}  // namespace

void register_gemm_cases() {
  for (const Precision& p : kPrecisions)
    for (const int64_t n : {256, 1024, 4096, 8192}) {
      const std::string name =
          std::string("matmul_") + p.name + "_" + std::to_string(n);
      const auto unit =
          n <= 1024 ? benchmark::kMicrosecond : benchmark::kMillisecond;
      reg(name + "/tapeflow", unit, gemm_tapeflow, p, n);
      reg(name + "/raw", unit, gemm_raw, p, n);
    }
}

}  // namespace tapeflow_bench_cuda
