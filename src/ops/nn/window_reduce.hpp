#pragma once
// Pooling along one axis over windows listed index by index: what tf.nn.pool
// with a dilation rate needs, which the pooling kernels (fixed windows,
// fixed strides, no dilation) do not do. Max and mean over a box are
// separable, so a pool over several axes is one of these per axis.
#include <cstdint>
#include <vector>

#include "tapeflow/core/tensor.hpp"

namespace tapeflow::window {

/** The input positions each output reads along one axis, in order. */
using Windows = std::vector<std::vector<int64_t>>;

/**
 * Along `axis` of x, the max (or, with `max` false, the mean) of the
 * elements each window lists; the axis's extent becomes windows.size().
 * Windows must be non-empty, of one size and in range. Built from gather
 * and elementwise maximum or mean, so the tape differentiates it: a max's
 * gradient goes to the window's first maximum (its first NaN, if any).
 */
Tensor reduce(const Tensor& x, int64_t axis, const Windows& windows, bool max);

}  // namespace tapeflow::window
