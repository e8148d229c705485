#pragma once
// Host side of the GPU convolutions: a call's geometry, and which of the four
// algorithms runs it (design: CUDA.md §4 "Conv"). Pure functions without CUDA
// headers, so CI checks the choices on tables.
#include <cstdint>

#include "core/conv_index.hpp"
#include "ops/nn/conv_ops.hpp"

namespace tapeflow {

/**
 * The geometry of a pass over channels-first views x (N, C, d...), filter
 * (O, C / groups, k...) and y (N, O, d'...), with each operand's strides:
 * an NHWC tensor's channels-first view is read where it lies.
 */
ConvGeometry conv_geometry(const ConvAttrs& a, const Shape& x, const Shape& w,
                           const Shape& y, const Shape& x_strides,
                           const Shape& w_strides, const Shape& y_strides);

enum class ConvAlgo { depthwise_direct, gemm_1x1, im2col_gemm, implicit_gemm };

/** "depthwise_direct", "gemm_1x1", "im2col_gemm" or "implicit_gemm". */
const char* conv_algo_name(ConvAlgo algo);

/** What the device offers the choice. */
struct ConvDeviceFacts {
  /** cuBLAS loaded: the two GEMM paths need it. */
  bool blas = true;
};

/** An algorithm, and for im2col_gemm the images per col buffer. */
struct ConvChoice {
  ConvAlgo algo = ConvAlgo::implicit_gemm;
  int64_t images_per_chunk = 0;
};

/**
 * Bytes the im2col path may hold in scratch (its col buffer, and the
 * filter gradient's gathered dy) under a memory limit.
 */
int64_t conv_col_budget_bytes(int64_t memory_limit_bytes);

/**
 * The most images, at most g.n, whose scratch fits conv_col_budget_bytes:
 * the col matrix (cg·∏k rows, P columns per image) and the filter
 * gradient's dy gathered per group (og rows, P columns); 0 when not even
 * one image's does.
 */
int64_t conv_images_per_chunk(const ConvGeometry& g, int64_t element_bytes,
                              int64_t memory_limit_bytes);

/**
 * The algorithm for all three passes of a convolution, its rules tried in
 * order (CUDA.md §4): depthwise direct, 1x1 GEMM, im2col + GEMM, implicit
 * GEMM.
 */
ConvChoice choose_conv_algo(const ConvGeometry& g, int64_t element_bytes,
                            const ConvDeviceFacts& device,
                            int64_t memory_limit_bytes);

}  // namespace tapeflow
