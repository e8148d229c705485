#pragma once
#include <cstdint>
#include <vector>

#include "tapeflow/core/tensor.hpp"

// Reductions over `axes` (empty = all axes; negative axes count from the end).
namespace tapeflow {

using Axes = std::vector<int64_t>;

Tensor sum(const Tensor& x, const Axes& axes = {}, bool keepdims = false);
Tensor mean(const Tensor& x, const Axes& axes = {}, bool keepdims = false);
/**
 * NaN where the reduced elements hold a NaN (NumPy, PyTorch). Gradient is
 * shared equally among tied maxima, as in TensorFlow, or among the NaNs.
 */
Tensor max(const Tensor& x, const Axes& axes = {}, bool keepdims = false);
Tensor min(const Tensor& x, const Axes& axes = {}, bool keepdims = false);
Tensor prod(const Tensor& x, const Axes& axes = {}, bool keepdims = false);
/** Index (int64) of the first maximum along `axis`, or of the first NaN. */
Tensor argmax(const Tensor& x, int64_t axis = 0);
Tensor argmin(const Tensor& x, int64_t axis = 0);
/**
 * log(sum(exp(x))) over `axes` without overflow (tf.math.reduce_logsumexp):
 * the maximum is taken out first; all -inf gives -inf, a +inf gives +inf.
 * Floating point only.
 */
Tensor logsumexp(const Tensor& x, const Axes& axes = {}, bool keepdims = false);
/**
 * Biased variance, mean((x - mean(x))^2), over `axes`
 * (tf.math.reduce_variance); integers are taken as float32, as mean does.
 */
Tensor variance(const Tensor& x, const Axes& axes = {}, bool keepdims = false);
/** sqrt(variance(x, axes, keepdims)) (tf.math.reduce_std). */
Tensor stddev(const Tensor& x, const Axes& axes = {}, bool keepdims = false);
/**
 * Running sums along `axis` (tf.math.cumsum): out[i] = x[0] + ... + x[i];
 * `exclusive` leaves x[i] out (out[0] = 0), `reverse` sums from the end.
 * The input's shape and dtype (bool sums as int64; integers wrap around).
 */
Tensor cumsum(const Tensor& x, int64_t axis = 0, bool exclusive = false,
              bool reverse = false);
/**
 * The number of nonzero elements (true, NaN included) over `axes`, int64
 * (tf.math.count_nonzero); any and all whether some or every one is nonzero,
 * bool_ (tf.math.reduce_any, reduce_all): false and true over no elements.
 */
Tensor count_nonzero(const Tensor& x, const Axes& axes = {},
                     bool keepdims = false);
Tensor any(const Tensor& x, const Axes& axes = {}, bool keepdims = false);
Tensor all(const Tensor& x, const Axes& axes = {}, bool keepdims = false);
/** Sums `x` down to `shape` (undoing a broadcast). */
Tensor sum_to(const Tensor& x, const Shape& shape);

}  // namespace tapeflow
