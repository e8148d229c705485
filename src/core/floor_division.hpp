#pragma once
// Floor division and its remainder (tf.math.floordiv and tf.math.floormod,
// Python's // and %), shared by the CPU kernels and the CUDA ones: the
// quotient rounds toward -inf and the remainder takes the divisor's sign, so
// x = floor_div(x, y) * y + floor_mod(x, y). Floats follow Python (and
// PyTorch's floor_divide): the quotient is (x - fmod(x, y)) / y rounded to
// the nearest whole number, not floor(x / y), whose rounded division can
// land on the wrong side of a whole number (floor(1 / 0.1) is 10, 1 // 0.1
// is 9). Integer division by zero is refused by the public functions before
// any kernel runs; the kernels give 0 there rather than trap.
#include <cmath>
#include <type_traits>

#include "core/host_device.hpp"

namespace tapeflow {

/** -a with signed integers wrapping (-INT_MIN is INT_MIN, as in NumPy). */
template <class T>
TPF_HOST_DEVICE inline T negate_wrapping(T a) {
  using U = std::make_unsigned_t<T>;
  return static_cast<T>(U(0) - static_cast<U>(a));
}

template <class T>
TPF_HOST_DEVICE inline T floor_div(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    if (b == T(0)) return T(0);
    // INT_MIN / -1 overflows (and traps on x86): it wraps, as in NumPy.
    if (b == T(-1)) return negate_wrapping(a);
    if constexpr (sizeof(T) <= 4) {
      // Exact: a rounded quotient of 31-bit integers never reaches a whole
      // number the true one falls short of, and a double divides faster
      // than idiv.
      using std::floor;
      return static_cast<T>(floor(double(a) / double(b)));
    } else {
      const T q = a / b;
      return (a % b != T(0) && ((a < T(0)) != (b < T(0)))) ? T(q - 1) : q;
    }
  } else {
    using std::copysign;
    using std::floor;
    using std::fmod;
    if (b == T(0)) return a / b;  // +-inf, or NaN for 0 / 0
    const T mod = fmod(a, b);
    T div = (a - mod) / b;
    if (mod != T(0) && ((b < T(0)) != (mod < T(0)))) div -= T(1);
    if (div == T(0)) return copysign(T(0), a / b);
    T whole = floor(div);
    if (div - whole > T(0.5)) whole += T(1);
    return whole;
  }
}

template <class T>
TPF_HOST_DEVICE inline T floor_mod(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    if (b == T(0) || b == T(-1)) return T(0);  // INT_MIN % -1 traps on x86
    const T r = a % b;
    return (r != T(0) && ((r < T(0)) != (b < T(0)))) ? T(r + b) : r;
  } else {
    using std::fmod;
    const T r = fmod(a, b);  // exact; NaN for b = 0
    return (r != T(0) && ((r < T(0)) != (b < T(0)))) ? r + b : r;
  }
}

}  // namespace tapeflow
