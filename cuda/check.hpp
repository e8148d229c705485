#pragma once
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <string>

#include "tapeflow/core/error.hpp"

namespace tapeflow::cuda {

inline void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess)
    throw DeviceError(std::string("[cuda] expected ") + what +
                      " to succeed, got " + cudaGetErrorString(status));
}
inline void check(cublasStatus_t status, const char* what) {
  if (status != CUBLAS_STATUS_SUCCESS)
    throw DeviceError(std::string("[cublas] expected ") + what +
                      " to succeed, got status " + std::to_string(int(status)));
}

}  // namespace tapeflow::cuda

// Status-check wrapper: the failing expression's text goes into the error.
#define TAPEFLOW_CUDA_CHECK(expr) ::tapeflow::cuda::check((expr), #expr)
