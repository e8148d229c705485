#pragma once
// Checked size arithmetic: element counts, byte counts, begin + size and
// output extents computed from user input never wrap; a result that does not
// fit in int64 is a ValueError naming the user's op.
#include <cstdint>
#include <string_view>

#include "core/op_error.hpp"
#include "tapeflow/core/error.hpp"
#include "tapeflow/core/shape.hpp"

namespace tapeflow {

/** a * b, or ValueError "[op] expected <what> to fit in int64, ...". */
inline int64_t checked_mul(int64_t a, int64_t b, std::string_view op,
                           std::string_view what) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) [[unlikely]]
    throw op_error<ValueError>(op, "expected ", what, " to fit in int64, got ",
                               a, " * ", b);
  return r;
}

/** a + b, or ValueError "[op] expected <what> to fit in int64, ...". */
inline int64_t checked_add(int64_t a, int64_t b, std::string_view op,
                           std::string_view what) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) [[unlikely]]
    throw op_error<ValueError>(op, "expected ", what, " to fit in int64, got ",
                               a, " + ", b);
  return r;
}

/**
 * The element count of `s`: ShapeError for a negative extent, ValueError
 * when the product does not fit in int64.
 */
inline int64_t checked_numel(const Shape& s, std::string_view op) {
  int64_t n = 1;
  for (int64_t d : s) {
    if (d < 0) [[unlikely]]
      throw op_error<ShapeError>(
          op, "expected non-negative extents, got shape ", s.str());
    if (__builtin_mul_overflow(n, d, &n)) [[unlikely]]
      throw op_error<ValueError>(op,
                                 "expected a shape whose element count "
                                 "fits in int64, got ",
                                 s.str());
  }
  return n;
}

}  // namespace tapeflow
