#pragma once
#include <cstdint>
#include <string>

#include "core/op_error.hpp"
#include "tapeflow/core/error.hpp"

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
 * Parts of a tensor with elements hold one element at least, so their count
 * is bounded by the data. An empty tensor splits into any count (tf.split of
 * an empty batch across replicas), each part a tensor handle: split and
 * unstack bound it here. ValueError past 2^20 parts of an empty tensor.
 */
inline void check_empty_parts(int64_t numel, int64_t parts, const char* op) {
  constexpr int64_t most_empty_parts = int64_t{1} << 20;
  if (numel == 0 && parts > most_empty_parts)
    throw op_error<ValueError>(op, "expected at most ", most_empty_parts,
                               " parts of an empty tensor, got ", parts);
}

}  // namespace tapeflow
