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
/** Sums `x` down to `shape` (undoing a broadcast). */
Tensor sum_to(const Tensor& x, const Shape& shape);

}  // namespace tapeflow
