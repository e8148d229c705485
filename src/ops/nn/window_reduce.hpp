#pragma once
// Pooling along one axis over dilated windows: what tf.nn.pool with a
// dilation rate needs, which the pooling kernels (fixed windows, fixed
// strides, no dilation) do not do. Max and mean over a box are separable,
// so a pool over several axes is one of these per axis.
#include <cstdint>

#include "tapeflow/core/tensor.hpp"

namespace tapeflow::window {

/**
 * Output o reads the input at o + j * rate - offset for the taps
 * j = 0..size-1; a position outside the input reads 0 (TF's zero padding
 * under SAME).
 */
struct Dilated {
  int64_t outputs;
  int64_t size;
  int64_t rate;
  int64_t offset;
};

/**
 * Along `axis` of x, the max (or, with `max` false, the mean over all
 * `size` taps, padding included) of each window; the axis's extent becomes
 * w.outputs. One gather per tap that reads the input somewhere, so the cost
 * follows the data, not the window. Built from gather, where and maximum or
 * add, so the tape differentiates it: a max's gradient goes to the window's
 * first maximum (its first NaN, if any), a padded position's to nothing.
 */
Tensor reduce(const Tensor& x, int64_t axis, const Dilated& w, bool max);

}  // namespace tapeflow::window
