#pragma once
// Checked size arithmetic: element counts, byte counts, begin + size and
// output extents computed from user input never wrap; a result that does not
// fit in int64 is a ValueError naming the user's op.
#include <cstdint>
#include <string_view>

#include "core/op_error.hpp"
#include "tapeflow/core/dtype.hpp"
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
 * How many windows of `extent` elements, `stride` apart, fit in `padded`
 * elements: (padded - extent) / stride + 1, and 0 when not one fits (C++
 * division truncates -1 / 2 to 0, which would count one window too many).
 */
inline int64_t window_count(int64_t padded, int64_t extent, int64_t stride) {
  return padded < extent ? 0 : (padded - extent) / stride + 1;
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

/**
 * A host value stored as dtype `t`: ValueError when an integer dtype cannot
 * hold it (NaN, infinite or out of range), as NumPy 2 refuses such a
 * conversion; a plain cast would be undefined behaviour.
 */
inline void check_representable(double v, DType t, std::string_view op) {
  bool fits = true;
  if (t == int32) fits = v >= -2147483648.0 && v <= 2147483647.0;
  if (t == int64)
    fits = v >= -9223372036854775808.0 && v < 9223372036854775808.0;
  if (!fits) [[unlikely]]
    throw op_error<ValueError>(op, "expected a value representable in ",
                               dtype_name(t), ", got ", v);
}

}  // namespace tapeflow
