#pragma once
// Direct-loop kernels of the nn ops: every dtype the oneDNN kernels leave
// out (float64), and the argmax, which oneDNN does not expose.
#include "ops/nn/norm_ops.hpp"
#include "ops/nn/pool_ops.hpp"

namespace tapeflow::cpu {

void max_pool_direct(const MaxPool& op, Inputs in, Tensor& out);
void avg_pool_direct(const AvgPool& op, Inputs in, Tensor& out);
void max_pool_grad_direct(const MaxPoolGrad& op, Inputs in, Tensor& out);
void avg_pool_grad_direct(const AvgPoolGrad& op, Inputs in, Tensor& out);
void max_pool_argmax_direct(const MaxPoolArgmax& op, Inputs in, Tensor& out);

void batch_norm_direct(const FusedBatchNorm& op, Inputs in, Tensor& out);
void batch_moments_direct(const BatchMoments& op, Inputs in, Tensor& out);
void batch_norm_grad_direct(const BatchNormGrad& op, Inputs in, Tensor& out);

}  // namespace tapeflow::cpu
