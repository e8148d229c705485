#pragma once
#include <cstdint>
#include <utility>
#include <vector>

#include "tapeflow/core/tensor.hpp"

// Shape manipulation. transpose, slice, squeeze, expand_dims and
// broadcast_to return views that share storage; so does reshape where the
// strides allow it (contiguous data, size-1 axes, whole rows of a slice),
// else it returns a contiguous copy.
namespace tapeflow {

/** New shape with the same element count; one extent may be -1. */
Tensor reshape(const Tensor& x, const Shape& shape);
/** Permutes axes; default perm reverses them. */
Tensor transpose(const Tensor& x, const std::vector<int64_t>& perm = {});
Tensor concat(const std::vector<Tensor>& tensors, int64_t axis);
/** Splits into `num` equal parts along `axis`. */
std::vector<Tensor> split(const Tensor& x, int64_t num, int64_t axis = 0);
/**
 * Splits into parts of the given sizes along `axis`; one size may be -1, the
 * rest of the axis (tf.split).
 */
std::vector<Tensor> split(const Tensor& x, const std::vector<int64_t>& sizes,
                          int64_t axis = 0);
/** Joins same-shaped tensors along a new axis (tf.stack). */
Tensor stack(const std::vector<Tensor>& tensors, int64_t axis = 0);
/**
 * The slices of x along `axis`, that axis removed (tf.unstack): x.shape()[axis]
 * tensors whose gradient is one stack.
 */
std::vector<Tensor> unstack(const Tensor& x, int64_t axis = 0);
/** x[begin : begin + size] per axis; size -1 means "to the end". */
Tensor slice(const Tensor& x, const std::vector<int64_t>& begin,
             const std::vector<int64_t>& size);
/** Removes the given size-1 axes (all of them when empty). */
Tensor squeeze(const Tensor& x, const std::vector<int64_t>& axes = {});
/** Inserts a size-1 axis at `axis`. */
Tensor expand_dims(const Tensor& x, int64_t axis);
/** Broadcasts to `shape` without copying (stride 0). */
Tensor broadcast_to(const Tensor& x, const Shape& shape);
/** Float32 one-hot encoding along a new last axis; out-of-range -> zeros row.
 */
Tensor one_hot(const Tensor& indices, int64_t depth, double on_value = 1.0,
               double off_value = 0.0, DType dtype = float32);
/** Elements of `params` at `indices` along `axis` (indices range-checked). */
Tensor gather(const Tensor& params, const Tensor& indices, int64_t axis = 0);
/**
 * x repeated multiples[i] times along each axis i (tf.tile): one multiple
 * per axis, each >= 0. Its gradient sums the copies.
 */
Tensor tile(const Tensor& x, const std::vector<int64_t>& multiples);
/** What pad puts around an axis (tf.pad's modes). */
enum class PadMode {
  constant,   // constant_value
  reflect,    // the edge mirrored without itself: [1 2 3] -> 3 2 [1 2 3] 2 1
  symmetric,  // the edge mirrored with itself:    [1 2 3] -> 2 1 [1 2 3] 3 2
};
/**
 * x with paddings[i] = (before, after) elements of `constant_value` added
 * around axis i (tf.pad, mode "CONSTANT"): one pair per axis, each >= 0.
 */
Tensor pad(const Tensor& x,
           const std::vector<std::pair<int64_t, int64_t>>& paddings,
           double constant_value = 0.0);
/**
 * pad in any mode. A mirrored axis takes at most extent - 1 elements per
 * side (reflect) or extent (symmetric), as TF; strings pad in those modes.
 */
Tensor pad(const Tensor& x,
           const std::vector<std::pair<int64_t, int64_t>>& paddings,
           PadMode mode, double constant_value = 0.0);
/**
 * x with its elements in reverse order along each of `axes` (tf.reverse,
 * torch.flip): a copy, every axis named once, negative axes counted from
 * the end. Its gradient reverses the output gradient the same way.
 */
Tensor reverse(const Tensor& x, const std::vector<int64_t>& axes);
/** Random permutation along axis 0 (repeatable under manual_seed). */
Tensor shuffle(const Tensor& x);

/** Shape of broadcasting a with b (NumPy rules), or ShapeError naming `op`. */
Shape broadcast_shapes(const Shape& a, const Shape& b,
                       const char* op = "broadcast");

}  // namespace tapeflow
