#pragma once
// Which arithmetic a GPU matrix product runs in (CUDA.md §5), as a pure
// function of the dtype and config::float32_matmul_precision(), kept free of
// CUDA so the CPU tests check the policy; cuda/matmul.cu maps each value to
// its cublasComputeType_t.
#include "tapeflow/config.hpp"
#include "tapeflow/core/dtype.hpp"

namespace tapeflow {

enum class GemmCompute {
  f32,            // float32 products and sums (CUBLAS_COMPUTE_32F)
  f32_fast_tf32,  // inputs rounded to TF32, float32 sums (..._FAST_TF32)
  f32_fast_bf16,  // inputs rounded to bfloat16, float32 sums (..._FAST_16BF)
  f64,            // float64 throughout (CUBLAS_COMPUTE_64F)
};

/**
 * float64 always computes in float64; float32 follows the precision setting:
 * highest keeps float32, high allows TF32 tensor cores, medium bfloat16 ones
 * (PyTorch's mapping). Matmul takes only the two floating dtypes.
 */
constexpr GemmCompute gemm_compute(DType dtype,
                                   config::Float32Precision precision) {
  if (dtype == DType::float64) return GemmCompute::f64;
  switch (precision) {
    case config::Float32Precision::high:
      return GemmCompute::f32_fast_tf32;
    case config::Float32Precision::medium:
      return GemmCompute::f32_fast_bf16;
    case config::Float32Precision::highest:
      break;
  }
  return GemmCompute::f32;
}

}  // namespace tapeflow
