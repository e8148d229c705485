// Small matrix products through LIBXSMM's JIT kernels: a 32x64x64 product
// costs oneDNN's GEMM ~6.4 us per call, most of it set-up (packing, blocking,
// the primitive's execute), against ~3.4 us here; an MLP step is all such
// products. LIBXSMM lives in a module loaded on first use, not in
// libtapeflow: its thread-locals (~0.8 KiB) would join libtapeflow's static
// TLS block, which a host that dlopens libtapeflow (Python through ctypes)
// has only ~1.6 KiB for (tools/check_static_tls.sh).
#pragma once

#include "tapeflow/core/tensor.hpp"

namespace tapeflow::cpu {

/**
 * Writes a @ b into out (float32 or float64, batch axes broadcast, operands
 * row- or column-major) when every matrix of the batch is small enough for
 * LIBXSMM to beat oneDNN and BLAS; returns false, writing nothing, when it
 * is not, or when libtapeflow_xsmm.so (module.cpp) cannot be loaded.
 */
bool small_matmul(const Tensor& a, const Tensor& b, Tensor& out);

/** Whether libtapeflow_xsmm.so is loaded (loading it on the first call). */
bool small_matmul_available();

}  // namespace tapeflow::cpu
