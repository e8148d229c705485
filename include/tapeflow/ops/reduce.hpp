#pragma once
#include <cstdint>
#include <vector>

#include "tapeflow/core/tensor.hpp"

// Reductions over `axes` (empty = all axes; negative axes count from the end).
namespace tapeflow {

using Axes = std::vector<int64_t>;

Tensor sum(const Tensor& x, const Axes& axes = {}, bool keepdims = false);
Tensor mean(const Tensor& x, const Axes& axes = {}, bool keepdims = false);
/** Gradient is shared equally among tied maxima, as in TensorFlow. */
Tensor max(const Tensor& x, const Axes& axes = {}, bool keepdims = false);
Tensor min(const Tensor& x, const Axes& axes = {}, bool keepdims = false);
Tensor prod(const Tensor& x, const Axes& axes = {}, bool keepdims = false);
/** Index (int64) of the first maximum along `axis`. */
Tensor argmax(const Tensor& x, int64_t axis = 0);
Tensor argmin(const Tensor& x, int64_t axis = 0);
/** Sums `x` down to `shape` (undoing a broadcast). */
Tensor sum_to(const Tensor& x, const Shape& shape);

}  // namespace tapeflow
