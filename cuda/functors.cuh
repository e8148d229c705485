#pragma once
// Elementwise math for device code; CUDA's math headers overload exp, log,
// ... for float and double alike.
#include <cstdint>
#include <type_traits>

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
struct NotF {
  __device__ uint8_t operator()(uint8_t a) const { return !a; }
};

struct AddF {
  template <class T>
  __device__ T operator()(T a, T b) const {
    return a + b;
  }
};
struct SubF {
  template <class T>
  __device__ T operator()(T a, T b) const {
    return a - b;
  }
};
struct MulF {
  template <class T>
  __device__ T operator()(T a, T b) const {
    return a * b;
  }
};
struct DivF {
  template <class T>
  __device__ T operator()(T a, T b) const {
    return a / b;
  }
};
struct TanhGradF {
  template <class T>
  __device__ T operator()(T y, T g) const {
    return g * (T(1) - y * y);
  }
};
struct SigmoidGradF {
  template <class T>
  __device__ T operator()(T y, T g) const {
    return g * y * (T(1) - y);
  }
};
struct PowF {
  template <class T>
  __device__ T operator()(T a, T b) const {
    return pow(a, b);
  }
};
// max and min are NaN when either operand is (docs/architecture.md, "NaN").
struct MinF {
  template <class T>
  __device__ T operator()(T a, T b) const {
    return a < b || a != a ? a : b;
  }
};
struct ReluGradF {
  template <class T>
  __device__ T operator()(T y, T g) const {
    return y <= T(0) ? T(0) : g;
  }
};
struct MaxF {
  template <class T>
  __device__ T operator()(T a, T b) const {
    return a > b || a != a ? a : b;
  }
};

struct EqF {
  template <class T>
  __device__ uint8_t operator()(T a, T b) const {
    return a == b;
  }
};
struct NeF {
  template <class T>
  __device__ uint8_t operator()(T a, T b) const {
    return a != b;
  }
};
struct LtF {
  template <class T>
  __device__ uint8_t operator()(T a, T b) const {
    return a < b;
  }
};
struct LeF {
  template <class T>
  __device__ uint8_t operator()(T a, T b) const {
    return a <= b;
  }
};
struct GtF {
  template <class T>
  __device__ uint8_t operator()(T a, T b) const {
    return a > b;
  }
};
struct GeF {
  template <class T>
  __device__ uint8_t operator()(T a, T b) const {
    return a >= b;
  }
};
struct AndF {
  __device__ uint8_t operator()(uint8_t a, uint8_t b) const { return a && b; }
};
struct OrF {
  __device__ uint8_t operator()(uint8_t a, uint8_t b) const { return a || b; }
};

}  // namespace tapeflow::cuda
