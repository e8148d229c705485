// Small matrix products through LIBXSMM's JIT kernels: a 32x64x64 product
// costs oneDNN's GEMM ~6.4 us per call, most of it set-up (packing, blocking,
// the primitive's execute), against ~3.4 us here; an MLP step is all such
// products.
#pragma once

#include "tapeflow/core/tensor.hpp"

namespace tapeflow::cpu {

/**
 * Writes a @ b into out (float32 or float64, batch axes broadcast, operands
 * row- or column-major) when every matrix of the batch is small enough for
 * LIBXSMM to beat oneDNN and BLAS; returns false, writing nothing, when it
 * is not.
 */
bool small_matmul(const Tensor& a, const Tensor& b, Tensor& out);

}  // namespace tapeflow::cpu
