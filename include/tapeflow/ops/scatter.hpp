#pragma once
#include <cstdint>

#include "tapeflow/core/tensor.hpp"
// Index tuples and segments: gather_nd, scatter_nd and the segment sums. An
// `indices` tensor (int32 or int64) holds one index tuple along its last
// axis: k indices into the first k axes of the indexed shape, each in
// [0, extent) (an IndexError naming the tuple and axis otherwise), so a tuple
// picks the slice shape[k:]. Scatters add where tuples repeat, on a GPU with
// atomics in a varying order (float sums may differ in their last bits).
namespace tapeflow {
/**
 * The slices of `params` at the tuples in `indices` (tf.gather_nd, batch
 * dims 0): indices.shape[:-1] + params.shape[k:]. Its gradient scatter-adds.
 */
Tensor gather_nd(const Tensor& params, const Tensor& indices);
/**
 * zeros(shape) with `updates` added at the tuples in `indices`
 * (tf.scatter_nd): updates.shape must be indices.shape[:-1] + shape[k:].
 * Numeric dtypes; the gradient wrt updates gathers.
 */
Tensor scatter_nd(const Tensor& indices, const Tensor& updates,
                  const Shape& shape);
/** tensor + scatter_nd(indices, updates, tensor.shape) (tf's add). */
Tensor tensor_scatter_nd_add(const Tensor& tensor, const Tensor& indices,
                             const Tensor& updates);
/**
 * `tensor` with the slices at the tuples replaced by `updates`
 * (tf.tensor_scatter_nd_update). Where a tuple repeats, its last update wins
 * (NumPy's a[i] = v), on every device; the overwritten ones get no gradient.
 */
Tensor tensor_scatter_nd_update(const Tensor& tensor, const Tensor& indices,
                                const Tensor& updates);
/**
 * Sums of data's slices by segment (tf.math.unsorted_segment_sum):
 * out[s] = the sum of data[i] over the i with segment_ids[i] = s, where
 * segment_ids' shape is a prefix of data's and each id is in
 * [0, num_segments). The result is (num_segments,) + data.shape[ids.rank:],
 * 0 where a segment has no slice.
 */
Tensor unsorted_segment_sum(const Tensor& data, const Tensor& segment_ids,
                            int64_t num_segments);
/**
 * tf.math.segment_sum: 1-D segment_ids sorted ascending (a ValueError naming
 * the first that is not), num_segments the last id + 1.
 */
Tensor segment_sum(const Tensor& data, const Tensor& segment_ids);
}  // namespace tapeflow
