#pragma once
// One element's dtype conversion, shared by the CPU and CUDA cast kernels
// (and fill), so both backends follow one documented rule.
#include <cstdint>
#include <type_traits>

#include "core/host_device.hpp"

namespace tapeflow {

/**
 * `v` as a To, the way cast() defines it:
 * - into bool (uint8_t), any non-zero value is true;
 * - a floating value into an integer dtype saturates: NaN becomes 0 and a
 *   value beyond the range becomes the nearest bound (XLA's and Rust's rule);
 *   a plain C++ conversion of such a value is undefined behaviour;
 * - an integer into a narrower integer wraps, two's complement, as in NumPy.
 */
template <class To, class From>
TPF_HOST_DEVICE constexpr To convert_value(From v) {
  if constexpr (std::is_same_v<To, uint8_t>) {
    return v != From(0);
  } else if constexpr (std::is_floating_point_v<From> &&
                       std::is_integral_v<To>) {
    static_assert(std::is_signed_v<To>,
                  "integer dtypes other than bool are signed");
    // Spelled out, not numeric_limits: device code may not call host
    // constexpr functions. -kMin is a power of two, so From holds it exactly.
    constexpr To kMin =
        static_cast<To>(std::make_unsigned_t<To>(1) << (8 * sizeof(To) - 1));
    constexpr To kMax = static_cast<To>(~kMin);
    constexpr From kBelowMin = static_cast<From>(kMin);
    constexpr From kAboveMax = -static_cast<From>(kMin);
    if (v != v) return To(0);
    if (v <= kBelowMin) return kMin;
    if (v >= kAboveMax) return kMax;
    return static_cast<To>(v);
  } else {
    return static_cast<To>(v);
  }
}

}  // namespace tapeflow
