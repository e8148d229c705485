#pragma once
// Direct-loop kernels of the nn ops: every dtype the oneDNN kernels leave
// out (float64), the argmax, which oneDNN does not expose, and the xsimd
// kernels that beat oneDNN's.
#include "ops/nn/norm_ops.hpp"
#include "ops/nn/pool_ops.hpp"

namespace tapeflow::cpu {

void max_pool_direct(const MaxPool& op, Inputs in, const Outputs& outs);
void avg_pool_direct(const AvgPool& op, Inputs in, const Outputs& outs);
void max_pool_scatter_direct(const MaxPoolScatter& op, Inputs in,
                             const Outputs& outs);
void max_pool_gather_direct(const MaxPoolGather& op, Inputs in,
                            const Outputs& outs);
void avg_pool_grad_direct(const AvgPoolGrad& op, Inputs in,
                          const Outputs& outs);
void max_pool_argmax_direct(const MaxPoolArgmax& op, Inputs in,
                            const Outputs& outs);

/** float32 2x2/2 max pooling without padding, x of `shape` (N, C, H, W)
 * (max_pool_2x2.cpp); the forward's workspace may be null. */
bool max_pool_2x2_applies(const PoolWindow& w, const Shape& x, DType dtype);
void max_pool_2x2(const float* x, float* y, int32_t* ws, const Shape& shape);
void max_pool_2x2_scatter(const float* dy, const int32_t* ws, float* dx,
                          const Shape& shape);
void max_pool_2x2_gather(const float* gx, const int32_t* ws, float* y,
                         const Shape& shape);
/** MaxPoolArgmax's TensorFlow indices from a 2x2/2 workspace (any dtype's). */
void max_pool_2x2_tf_argmax(const int32_t* ws, int64_t* argmax,
                            const Shape& shape, bool include_batch);

void batch_norm_direct(const FusedBatchNorm& op, Inputs in,
                       const Outputs& outs);
/** Per-channel mean and biased variance of x (N, C, ...), one pass. */
void channel_moments(const Tensor& x, Tensor& mean, Tensor& variance);
void batch_moments_direct(const BatchMoments& op, Inputs in,
                          const Outputs& outs);
void batch_norm_grad_direct(const BatchNormGrad& op, Inputs in,
                            const Outputs& outs);

}  // namespace tapeflow::cpu
