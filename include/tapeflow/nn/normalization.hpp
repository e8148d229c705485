#pragma once
// Batch and layer normalization, moments (tpf::nn).
#include <utility>
#include <vector>

#include "tapeflow/core/tensor.hpp"

namespace tapeflow::nn {

/**
 * (x - mean) * scale / sqrt(variance + variance_epsilon) + offset, all
 * broadcast against x (TensorFlow's formula). `offset` and `scale` may be
 * undefined (Tensor()) for "absent". A composite of public ops.
 */
Tensor batch_normalization(const Tensor& x, const Tensor& mean,
                           const Tensor& variance, const Tensor& offset,
                           const Tensor& scale, double variance_epsilon);

/** Mean and (biased) variance of x over `axes`; a composite. */
std::pair<Tensor, Tensor> moments(const Tensor& x,
                                  const std::vector<int64_t>& axes,
                                  bool keepdims = false);

/**
 * Per-channel mean and biased variance of x (N, C, ...) over every axis but
 * the channel axis 1, each of shape (C,): `auto [mean, var] = ...`. One pass
 * over x (float32 accumulates in double); the statistics fused_batch_norm
 * trains with. Differentiable to any order.
 */
std::pair<Tensor, Tensor> batch_moments(const Tensor& x);

/** What fused_batch_norm returns: `auto [y, m, v] = ...`. */
struct BatchNormResult {
  Tensor y;
  Tensor batch_mean;
  Tensor batch_var;
};
/**
 * Batch normalization of x (N, C, ...) over every axis but the channel axis
 * 1, with per-channel scale and offset (C,) (undefined = 1 and 0).
 * training: normalizes with the batch mean and biased batch variance, which
 * it returns; if running_mean/running_var are given it updates them in place,
 * running = momentum * running + (1 - momentum) * batch, with the unbiased
 * (n / (n - 1)) batch variance for running_var, as TF's fused kernel and
 * Keras do. Not training: normalizes with running_mean/running_var (required)
 * and returns them as batch_mean/batch_var. float32 runs through oneDNN,
 * float64 through direct loops; differentiable once in x, scale and offset.
 */
BatchNormResult fused_batch_norm(const Tensor& x, const Tensor& scale,
                                 const Tensor& offset, double epsilon = 1e-3,
                                 bool training = true,
                                 Tensor running_mean = Tensor(),
                                 Tensor running_var = Tensor(),
                                 double momentum = 0.99);

/**
 * Normalizes over the axes from `begin_axis` to the last, then scales by
 * gamma and shifts by beta (undefined = absent; both broadcast against the
 * normalized axes). A composite.
 */
Tensor layer_normalization(const Tensor& x, int64_t begin_axis,
                           const Tensor& gamma, const Tensor& beta,
                           double epsilon = 1e-5);

}  // namespace tapeflow::nn
