#pragma once
#include <algorithm>
#include <cstdint>
#include <string>

#include "core/op_error.hpp"
#include "core/variable_lock.hpp"
#include "tapeflow/core/error.hpp"
#include "tapeflow/core/tensor.hpp"
#include "tapeflow/core/tensor_impl.hpp"

namespace tapeflow {

/** `axis` in [0, rank), counting negative axes from the end; IndexError else.
 */
inline int64_t normalize_axis(int64_t axis, int64_t rank, const char* op) {
  if (axis < -rank || axis >= rank)
    throw op_error<IndexError>(op, "expected an axis in [", -rank, ", ", rank,
                               "), got ", axis);
  return axis < 0 ? axis + rank : axis;
}

/**
 * Each part of a split or unstack is a tensor handle, so their count is
 * bounded by the elements x stores: one per part at least. An empty tensor
 * splits into any count (tf.split of an empty batch across replicas), and a
 * broadcast view stores one value for any count: both take at most 2^20
 * parts more than they store. ValueError past that.
 */
inline void check_part_count(const Tensor& x, int64_t parts, const char* op) {
  constexpr int64_t most_unstored_parts = int64_t{1} << 20;
  const int64_t stored = static_cast<int64_t>(storage_of(*x.impl())->nbytes() /
                                              itemsize(x.dtype()));
  if (parts <= stored || parts <= most_unstored_parts) return;
  if (x.numel() == 0)
    throw op_error<ValueError>(op, "expected at most ", most_unstored_parts,
                               " parts of an empty tensor, got ", parts);
  throw op_error<ValueError>(
      op, "expected at most ", std::max(stored, most_unstored_parts),
      " parts of a view that stores ", stored, " elements, got ", parts);
}

}  // namespace tapeflow
