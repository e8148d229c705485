#pragma once
// The GPU convolution paths behind cuda/conv.cu's dispatch (design: CUDA.md
// §4 "Conv"): depthwise direct kernels, 1×1 and im2col cuBLAS GEMMs, and the
// implicit GEMM. Each runs one pass on device operands read through the
// ConvGeometry's strides, after conv.cu has zero-filled the passes with
// nothing to sum.
#include <cstdint>

#include "core/conv_index.hpp"
#include "tapeflow/core/tensor.hpp"

namespace tapeflow::cuda {

enum class ConvPass { forward, grad_input, grad_filter };

/**
 * One pass's operands as channels-first views: x (dx for grad_input), the
 * filter (dw for grad_filter), y (dy for the gradients), the written one
 * preallocated; `bias` (O,) for a forward that adds one, else undefined.
 */
struct ConvOperands {
  Tensor x, w, y, bias;
};

/** Direct kernels for one input channel per group. */
void conv_depthwise(ConvPass pass, const ConvGeometry& g,
                    const ConvOperands& t);

/**
 * The implicit GEMM; the filter gradient splits K within
 * conv_col_budget_bytes(memory_limit_bytes) of workspace.
 */
void conv_implicit(ConvPass pass, const ConvGeometry& g, const ConvOperands& t,
                   int64_t memory_limit_bytes);

/**
 * 1×1, stride 1, no padding: cuBLAS GEMMs on x as it lies. False, having
 * run nothing, when an operand is no matrix or exceeds cuBLAS's int sizes.
 */
bool conv_gemm_1x1(ConvPass pass, const ConvGeometry& g, const ConvOperands& t);

/**
 * im2col + one cuBLAS GEMM per group per chunk of `images_per_chunk`
 * images. False, having run nothing, as for conv_gemm_1x1.
 */
bool conv_im2col(ConvPass pass, const ConvGeometry& g, const ConvOperands& t,
                 int64_t images_per_chunk);

/** y = its out-channel's bias at every position (before a beta-1 GEMM). */
void conv_fill_bias(const ConvGeometry& g, const ConvOperands& t);

template <class T>
const T* conv_in(const Tensor& t) {
  return static_cast<const T*>(t.raw_data());
}
template <class T>
T* conv_out(const Tensor& t) {
  return static_cast<T*>(t.raw_data());
}

/**
 * The Block of core/conv_tile.hpp and core/conv_depthwise.hpp on the
 * device: a phase runs once on each thread with that thread's state in
 * registers, and phases are separated by __syncthreads().
 */
template <class State>
class DeviceBlock {
 public:
  template <class F>
  __device__ void for_each_thread(F&& f) {
    f(static_cast<int>(threadIdx.x), state_);
  }
  __device__ void sync() { __syncthreads(); }

 private:
  State state_;
};

}  // namespace tapeflow::cuda
