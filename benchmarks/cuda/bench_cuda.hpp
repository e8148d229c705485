#pragma once
// What the tapeflow_bench_cuda files share: the GPU, the error helper, and
// each file's registration of its cases (called by bench_cuda.cpp's main in
// this order).
#include <benchmark/benchmark.h>
#include <cuda_runtime.h>

#include <string>
#include <tapeflow/tapeflow.hpp>

namespace tapeflow_bench_cuda {

inline const tapeflow::Device gpu0 = tapeflow::Device::cuda(0);

/** Aborts the benchmark with the CUDA error's text (not the process). */
inline bool failed(benchmark::State& state, cudaError_t status,
                   const char* what) {
  if (status == cudaSuccess) return false;
  state.SkipWithError(
      (std::string(what) + ": " + cudaGetErrorString(status)).c_str());
  return true;
}

/** Registers `name` (wall time; every iteration ends synchronized). */
template <class... Args>
void reg(const std::string& name, benchmark::TimeUnit unit, Args... args) {
  benchmark::RegisterBenchmark(name.c_str(), args...)
      ->Unit(unit)
      ->UseRealTime();
}

/** Elementwise ops and reductions at 64M floats (bench_cuda_ops.cpp). */
void register_op_cases();
/** GEMM through tapeflow and through cublasGemmEx (bench_cuda_gemm.cpp). */
void register_gemm_cases();
/** The CPU suite's conv, pooling and batch-norm cases (bench_cuda_nn.cpp). */
void register_nn_cases();
/** The samples' CNN training step (bench_cuda_train.cpp). */
void register_train_cases();

}  // namespace tapeflow_bench_cuda
