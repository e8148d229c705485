#pragma once
#include <cstdint>

#include "tapeflow/core/tensor.hpp"

// Sorting along one axis (negative axes count from the end). Every sort is
// stable: equal values keep the order of their positions. NaN ranks above
// every number (last ascending, first descending, as PyTorch), and -0 equals
// +0. Numeric and bool dtypes; strings are refused.
namespace tapeflow {

/** The int64 positions that sort x along `axis` (tf.argsort); no gradient. */
Tensor argsort(const Tensor& x, int64_t axis = -1, bool descending = false);
/**
 * x sorted along `axis` (tf.sort). Its gradient sends each output gradient
 * back to the position its value came from.
 */
Tensor sort(const Tensor& x, int64_t axis = -1, bool descending = false);

/** The k largest entries of each last-axis line and their int64 positions. */
struct TopK {
  Tensor values, indices;
};
/**
 * tf.math.top_k: along the last axis, the k largest values, largest first,
 * equal values in the order of their positions (lower first), NaN above
 * every number; 0 <= k <= the axis' extent. values' gradient goes back to
 * the positions in indices.
 */
TopK top_k(const Tensor& x, int64_t k);

}  // namespace tapeflow
