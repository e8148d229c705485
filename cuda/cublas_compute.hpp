#pragma once
// The cuBLAS compute type of a float32 or float64 product under
// config::float32_matmul_precision() (core/gemm_compute.hpp's policy), for
// every cuBLAS call the backend makes: matmul and the convolutions' GEMMs.
#include <cublas_v2.h>

#include "core/gemm_compute.hpp"

namespace tapeflow::cuda {

inline cublasComputeType_t cublas_compute_type(DType dtype) {
  switch (gemm_compute(dtype, config::float32_matmul_precision())) {
    case GemmCompute::f32_fast_tf32:
      return CUBLAS_COMPUTE_32F_FAST_TF32;
    case GemmCompute::f32_fast_bf16:
      return CUBLAS_COMPUTE_32F_FAST_16BF;
    case GemmCompute::f64:
      return CUBLAS_COMPUTE_64F;
    case GemmCompute::f32:
      break;
  }
  return CUBLAS_COMPUTE_32F;
}

}  // namespace tapeflow::cuda
