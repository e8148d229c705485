#pragma once
// Elementwise math for device code; CUDA's math headers overload exp, log,
// ... for float and double alike.
#include <cstdint>

namespace tapeflow::cuda {

struct NegF {
  template <class T>
  __device__ T operator()(T a) const {
    return -a;
  }
};
struct ExpF {
  template <class T>
  __device__ T operator()(T a) const {
    return exp(a);
  }
};
struct LogF {
  template <class T>
  __device__ T operator()(T a) const {
    return log(a);
  }
};
struct SqrtF {
  template <class T>
  __device__ T operator()(T a) const {
    return sqrt(a);
  }
};
struct RsqrtF {
  template <class T>
  __device__ T operator()(T a) const {
    return rsqrt(a);
  }
};
struct AbsF {
  template <class T>
  __device__ T operator()(T a) const {
    return a < T(0) ? -a : a;
  }
};
struct SignF {
  template <class T>
  __device__ T operator()(T a) const {
    return T((a > T(0)) - (a < T(0)));
  }
};
struct SquareF {
  template <class T>
  __device__ T operator()(T a) const {
    return a * a;
  }
};
struct SinF {
  template <class T>
  __device__ T operator()(T a) const {
    return sin(a);
  }
};
struct CosF {
  template <class T>
  __device__ T operator()(T a) const {
    return cos(a);
  }
};
struct TanhF {
  template <class T>
  __device__ T operator()(T a) const {
    return tanh(a);
  }
};
struct SigmoidF {
  template <class T>
  __device__ T operator()(T a) const {
    return T(1) / (T(1) + exp(-a));
  }
};
struct Expm1F {
  template <class T>
  __device__ T operator()(T a) const {
    return expm1(a);
  }
};
struct Log1pF {
  template <class T>
  __device__ T operator()(T a) const {
    return log1p(a);
  }
};
struct ErfF {
  template <class T>
  __device__ T operator()(T a) const {
    return erf(a);
  }
};
struct ReluF {
  template <class T>
  __device__ T operator()(T a) const {
    return a > T(0) ? a : T(0);
  }
};
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
struct PowF {
  template <class T>
  __device__ T operator()(T a, T b) const {
    return pow(a, b);
  }
};
struct MinF {
  template <class T>
  __device__ T operator()(T a, T b) const {
    return b < a ? b : a;
  }
};
struct ReluGradF {
  template <class T>
  __device__ T operator()(T y, T g) const {
    return y > T(0) ? g : T(0);
  }
};
struct MaxF {
  template <class T>
  __device__ T operator()(T a, T b) const {
    return b > a ? b : a;
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
