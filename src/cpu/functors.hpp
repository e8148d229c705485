#pragma once
// Binary elementwise math as functors callable on scalars and on xsimd
// batches (unary math is written inline where src/cpu/unary.cpp registers it).
// max and min propagate NaN as NumPy and PyTorch do (docs/architecture.md,
// "NaN"): xsimd's max/min are the x86 instructions, which return their second
// operand when either is NaN.
#include <cmath>
#include <type_traits>

#include "core/floor_division.hpp"
#include "cpu/floor_division_batch.hpp"
#include "cpu/xsimd_config.hpp"

namespace tapeflow::cpu {

template <class T>
using scalar_of =
    typename std::conditional_t<std::is_arithmetic_v<T>, std::type_identity<T>,
                                typename T::value_type>;

/**
 * f(a, b) with signed integers wrapping modulo 2^bits, as NumPy's and as the
 * SIMD lanes do: scalars go through the unsigned type, where C++ defines the
 * wrap (signed overflow is undefined behaviour).
 */
template <class T, class F>
T wrapping(const T& a, const T& b, F f) {
  if constexpr (std::is_integral_v<T> && std::is_signed_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(f(static_cast<U>(a), static_cast<U>(b)));
  } else {
    return f(a, b);
  }
}
/** -a, wrapping for signed integers (-INT64_MIN is INT64_MIN, as NumPy). */
template <class T>
T wrapping_neg(const T& a) {
  return wrapping(T(0), a, [](auto x, auto y) { return x - y; });
}

struct NotF {
  uint8_t operator()(uint8_t a) const { return !a; }
};

struct AddF {
  template <class T>
  T operator()(const T& a, const T& b) const {
    return wrapping(a, b, [](auto x, auto y) { return x + y; });
  }
};
struct SubF {
  template <class T>
  T operator()(const T& a, const T& b) const {
    return wrapping(a, b, [](auto x, auto y) { return x - y; });
  }
};
struct MulF {
  template <class T>
  T operator()(const T& a, const T& b) const {
    return wrapping(a, b, [](auto x, auto y) { return x * y; });
  }
};
struct DivF {
  template <class T>
  T operator()(const T& a, const T& b) const {
    return a / b;
  }
};
/** tanh's gradient from its output: g (1 - y^2). */
struct TanhGradF {
  template <class T>
  T operator()(const T& y, const T& g) const {
    return g * (T(1) - y * y);
  }
};
/** sigmoid's gradient from its output: g y (1 - y). */
struct SigmoidGradF {
  template <class T>
  T operator()(const T& y, const T& g) const {
    return g * y * (T(1) - y);
  }
};
/** f(a, b) of a scalar function f, lane by lane for batches. */
template <class T, class F>
T per_lane(const T& a, const T& b, F f) {
  if constexpr (std::is_arithmetic_v<T>) {
    return f(a, b);
  } else {
    using V = typename T::value_type;
    alignas(64) V va[T::size], vb[T::size];
    a.store_aligned(va);
    b.store_aligned(vb);
    for (size_t i = 0; i < T::size; ++i) va[i] = f(va[i], vb[i]);
    return T::load_aligned(va);
  }
}

/**
 * a^b by std::pow, lane by lane. xsimd's batch pow is exp(b log a) in the
 * batch's precision: it misses IEEE's special cases (0^0 = 1, 0^-1 = inf,
 * (-1)^1e30 = 1, 1^NaN = 1, inf^0 = 1, ...), flushes subnormals and in
 * float loses ~|b log a| ulp (0.5^100 was 40 ulp off). glibc's powf and pow
 * are within 1 ulp, and faster than any exact vector route xsimd offers
 * (1M elements on Zen 3: powf 6 ms, pow 15 ms; xsimd's double pow 21 ms).
 * An exponent of 2 is x * x, in a batch or alone.
 */
struct PowF {
  template <class T>
  T operator()(const T& a, const T& b) const {
    // The common constant exponent, a whole batch of it at vector speed.
    if constexpr (!std::is_arithmetic_v<T>)
      if (xsimd::all(b == T(2))) return a * a;
    return per_lane(a, b, [](auto x, auto y) {
      // x^2 is x * x wherever it lands (batch, tail, strided row): glibc's
      // pow is not correctly rounded and differs from x * x on exact ties.
      return y == decltype(y)(2) ? x * x : std::pow(x, y);
    });
  }
};
/**
 * Floor division and its remainder (core/floor_division.hpp): float batches
 * in the vector (cpu/floor_division_batch.hpp), integer lanes divide one at
 * a time anyway.
 */
struct FloorDivF {
  template <class T>
  T operator()(const T& a, const T& b) const {
    if constexpr (std::is_arithmetic_v<T>)
      return floor_div(a, b);
    else
      return batch_floor_div(a, b);
  }
};
struct FloorModF {
  template <class T>
  T operator()(const T& a, const T& b) const {
    if constexpr (std::is_arithmetic_v<T>)
      return floor_mod(a, b);
    else
      return batch_floor_mod(a, b);
  }
};
/**
 * atan2(y, x), inputs in that order. xsimd's batch atan2 is atan(|y / x|)
 * folded into the quadrant: NaN where y / x is (both zero, both infinite), so
 * batches holding such a lane go to std::atan2 (atan2(0, -0) = pi, atan2(inf,
 * inf) = pi / 4).
 */
struct Atan2F {
  template <class T>
  T operator()(const T& y, const T& x) const {
    if constexpr (!std::is_arithmetic_v<T>) {
      const auto no_ratio =
          ((y == T(0)) & (x == T(0))) | (xsimd::isinf(y) & xsimd::isinf(x));
      if (!xsimd::any(no_ratio)) [[likely]]
        return xsimd::atan2(y, x);
    }
    return per_lane(y, x, [](auto a, auto b) { return std::atan2(a, b); });
  }
};
/** a where `take_a` holds, else b: ?: for scalars, select for batches. */
template <class M, class T>
T pick(const M& take_a, const T& a, const T& b) {
  if constexpr (std::is_arithmetic_v<T>)
    return take_a ? a : b;
  else
    return xsimd::select(take_a, a, b);
}

/**
 * Whether a is NaN (never, for integers). xsimd's batch != is an ordered
 * compare, false for NaN, so batches (float and double only) ask
 * xsimd::isnan.
 */
template <class T>
auto is_nan(const T& a) {
  if constexpr (std::is_arithmetic_v<T>)
    return a != a;
  else
    return xsimd::isnan(a);
}

/** max(a, b), NaN when either is; a NaN `a` wins over a NaN `b`. */
struct MaxF {
  template <class T>
  T operator()(const T& a, const T& b) const {
    return pick((a > b) | is_nan(a), a, b);
  }
};
/** min(a, b), NaN when either is; a NaN `a` wins over a NaN `b`. */
struct MinF {
  template <class T>
  T operator()(const T& a, const T& b) const {
    return pick((a < b) | is_nan(a), a, b);
  }
};
/** The gradient g where relu kept y, as PyTorch: also where y is NaN. */
struct ReluGradF {
  template <class T>
  T operator()(const T& y, const T& g) const {
    return pick(y <= T(0), T(0), g);
  }
};

struct EqF {
  template <class T>
  uint8_t operator()(T a, T b) const {
    return a == b;
  }
};
struct NeF {
  template <class T>
  uint8_t operator()(T a, T b) const {
    return a != b;
  }
};
struct LtF {
  template <class T>
  uint8_t operator()(T a, T b) const {
    return a < b;
  }
};
struct LeF {
  template <class T>
  uint8_t operator()(T a, T b) const {
    return a <= b;
  }
};
struct GtF {
  template <class T>
  uint8_t operator()(T a, T b) const {
    return a > b;
  }
};
struct GeF {
  template <class T>
  uint8_t operator()(T a, T b) const {
    return a >= b;
  }
};
struct AndF {
  uint8_t operator()(uint8_t a, uint8_t b) const { return a && b; }
};
struct OrF {
  uint8_t operator()(uint8_t a, uint8_t b) const { return a || b; }
};

/**
 * The CPU's sigmoid, 1 / (1 + exp(-a)), of a scalar or a batch: the Sigmoid
 * kernel's and the fused LSTM cell's (cpu/lstm_cell.cpp).
 */
template <class V>
V cpu_sigmoid(const V& a) {
  return V(1) / (V(1) + xsimd::exp(-a));
}

}  // namespace tapeflow::cpu
