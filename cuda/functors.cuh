#pragma once
// Elementwise math for device code; CUDA's math headers overload exp, log,
// ... for float and double alike.
#include <cstdint>
#include <type_traits>

#include "core/floor_division.hpp"

namespace tapeflow::cuda {

template <class T>
__device__ T device_abs(T a) {
  if constexpr (std::is_floating_point_v<T>)
    return fabs(a);
  else
    return a < T(0) ? -a : a;
}

/**
 * A unary device functor in one line: TPF_DEVICE_UNARY(ExpF, exp(a)) makes
 * ExpF, whose call applies the expression to `a` of any element type T.
 */
#define TPF_DEVICE_UNARY(Name, expr)     \
  struct Name {                          \
    template <class T>                   \
    __device__ T operator()(T a) const { \
      return expr;                       \
    }                                    \
  }

TPF_DEVICE_UNARY(NegF, -a);
TPF_DEVICE_UNARY(ExpF, exp(a));
TPF_DEVICE_UNARY(LogF, log(a));
TPF_DEVICE_UNARY(SqrtF, sqrt(a));
TPF_DEVICE_UNARY(RsqrtF, rsqrt(a));
// fabs: -0.0 becomes +0.0, as on the CPU (xsimd::abs).
TPF_DEVICE_UNARY(AbsF, device_abs(a));
// NaN stays NaN (a != a), as on the CPU.
TPF_DEVICE_UNARY(SignF, a != a ? a : T((a > T(0)) - (a < T(0))));
TPF_DEVICE_UNARY(SquareF, a* a);
TPF_DEVICE_UNARY(SinF, sin(a));
TPF_DEVICE_UNARY(CosF, cos(a));
TPF_DEVICE_UNARY(TanhF, tanh(a));
TPF_DEVICE_UNARY(SigmoidF, T(1) / (T(1) + exp(-a)));
TPF_DEVICE_UNARY(Expm1F, expm1(a));
TPF_DEVICE_UNARY(Log1pF, log1p(a));
TPF_DEVICE_UNARY(ErfF, erf(a));
// NaN stays NaN, as in PyTorch and on the CPU.
TPF_DEVICE_UNARY(ReluF, a <= T(0) ? T(0) : a);
TPF_DEVICE_UNARY(AtanF, atan(a));
TPF_DEVICE_UNARY(FloorF, ::floor(a));
TPF_DEVICE_UNARY(CeilF, ::ceil(a));
// rint rounds ties to even, as the CPU's nearbyint.
TPF_DEVICE_UNARY(RoundF, ::rint(a));
/**
 * A binary device functor in one line: TPF_DEVICE_BINARY(AddF, a, b, a + b)
 * makes AddF, whose call computes the expression of operands a and b of any
 * element type T; TPF_DEVICE_PREDICATE(EqF, a == b) one giving a bool byte.
 */
#define TPF_DEVICE_BINARY(Name, a, b, expr)   \
  struct Name {                               \
    template <class T>                        \
    __device__ T operator()(T a, T b) const { \
      return expr;                            \
    }                                         \
  }
#define TPF_DEVICE_PREDICATE(Name, expr)            \
  struct Name {                                     \
    template <class T>                              \
    __device__ uint8_t operator()(T a, T b) const { \
      return expr;                                  \
    }                                               \
  }

struct NotF {
  __device__ uint8_t operator()(uint8_t a) const { return !a; }
};

TPF_DEVICE_BINARY(AddF, a, b, a + b);
TPF_DEVICE_BINARY(SubF, a, b, a - b);
TPF_DEVICE_BINARY(MulF, a, b, (a * b));
TPF_DEVICE_BINARY(DivF, a, b, a / b);
TPF_DEVICE_BINARY(FloorDivF, a, b, floor_div(a, b));
TPF_DEVICE_BINARY(FloorModF, a, b, floor_mod(a, b));
TPF_DEVICE_BINARY(Atan2F, y, x, ::atan2(y, x));
TPF_DEVICE_BINARY(TanhGradF, y, g, (g * (T(1) - y * y)));
TPF_DEVICE_BINARY(SigmoidGradF, y, g, (g * y * (T(1) - y)));
TPF_DEVICE_BINARY(PowF, a, b, pow(a, b));
// max and min are NaN when either operand is (docs/architecture.md, "NaN").
TPF_DEVICE_BINARY(MinF, a, b, a < b || a != a ? a : b);
TPF_DEVICE_BINARY(ReluGradF, y, g, y <= T(0) ? T(0) : g);
TPF_DEVICE_BINARY(MaxF, a, b, a > b || a != a ? a : b);

TPF_DEVICE_PREDICATE(EqF, a == b);
TPF_DEVICE_PREDICATE(NeF, a != b);
TPF_DEVICE_PREDICATE(LtF, a < b);
TPF_DEVICE_PREDICATE(LeF, a <= b);
TPF_DEVICE_PREDICATE(GtF, a > b);
TPF_DEVICE_PREDICATE(GeF, a >= b);
struct AndF {
  __device__ uint8_t operator()(uint8_t a, uint8_t b) const { return a && b; }
};
struct OrF {
  __device__ uint8_t operator()(uint8_t a, uint8_t b) const { return a || b; }
};

}  // namespace tapeflow::cuda
