#pragma once
// The dtype switches, written once per category. `f` is called with a value
// of the element type (uint8_t for bool_).
#include <cstdint>
#include <string>

#include "core/op_error.hpp"
#include "tapeflow/core/dtype.hpp"
#include "tapeflow/core/error.hpp"

namespace tapeflow {

/** Strings are never numbers: a numeric switch refuses them by name. */
[[noreturn]] inline void refuse_string(const char* op) {
  throw op_error<DTypeError>(op, "expected a numeric dtype, got string");
}

/** Every numeric dtype and bool_; `op` names a refused string_. */
template <class F>
decltype(auto) dispatch_all(DType t, const char* op, F&& f) {
  switch (t) {
    case DType::bool_:
      return f(uint8_t{});
    case DType::int32:
      return f(int32_t{});
    case DType::int64:
      return f(int64_t{});
    case DType::float32:
      return f(float{});
    case DType::float64:
      break;
    case DType::string_:
      refuse_string(op);
  }
  return f(double{});
}

template <class F>
decltype(auto) dispatch_numeric(DType t, const char* op, F&& f) {
  switch (t) {
    case DType::int32:
      return f(int32_t{});
    case DType::int64:
      return f(int64_t{});
    case DType::float32:
      return f(float{});
    case DType::float64:
      return f(double{});
    case DType::bool_:
    case DType::string_:
      break;
  }
  throw op_error<DTypeError>(op, "expected a numeric dtype, got ",
                             dtype_name(t));
}

template <class F>
decltype(auto) dispatch_floating(DType t, const char* op, F&& f) {
  if (t == DType::float32) return f(float{});
  if (t == DType::float64) return f(double{});
  throw op_error<DTypeError>(op, "expected float32 or float64, got ",
                             dtype_name(t));
}

/**
 * The unsigned type of t's element size, for kernels that move bits and
 * never read values (copies, gathers); `op` names a refused string_.
 */
template <class F>
void dispatch_bits(DType t, const char* op, F&& f) {
  switch (itemsize(t)) {
    case 1:
      return f(uint8_t{});
    case 4:
      return f(uint32_t{});
    default:
      if (is_string(t)) refuse_string(op);
      return f(uint64_t{});
  }
}

}  // namespace tapeflow
