#pragma once
#include <cstdint>
#include <string>

#include "tapeflow/core/error.hpp"

namespace tapeflow {

/** `axis` in [0, rank), counting negative axes from the end; IndexError else.
 */
inline int64_t normalize_axis(int64_t axis, int64_t rank, const char* op) {
  if (axis < -rank || axis >= rank)
    throw IndexError(std::string("[") + op + "] expected an axis in [" +
                     std::to_string(-rank) + ", " + std::to_string(rank) +
                     "), got " + std::to_string(axis));
  return axis < 0 ? axis + rank : axis;
}

}  // namespace tapeflow
