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

}  // namespace tapeflow
