#pragma once
// Binary elementwise math as functors callable on scalars and on xsimd
// batches (unary math is written inline where src/cpu/unary.cpp registers it).
#include <cmath>
#include <type_traits>

#include "cpu/xsimd_config.hpp"

namespace tapeflow::cpu {

template <class T>
using scalar_of =
    typename std::conditional_t<std::is_arithmetic_v<T>, std::type_identity<T>,
                                typename T::value_type>;

struct NotF {
  uint8_t operator()(uint8_t a) const { return !a; }
};

struct AddF {
  template <class T>
  T operator()(const T& a, const T& b) const {
    return a + b;
  }
};
struct SubF {
  template <class T>
  T operator()(const T& a, const T& b) const {
    return a - b;
  }
};
struct MulF {
  template <class T>
  T operator()(const T& a, const T& b) const {
    return a * b;
  }
};
struct DivF {
  template <class T>
  T operator()(const T& a, const T& b) const {
    return a / b;
  }
};
struct PowF {
  template <class T>
  T operator()(const T& a, const T& b) const {
    return xsimd::pow(a, b);
  }
};
struct MinF {
  template <class T>
  T operator()(const T& a, const T& b) const {
    return xsimd::min(a, b);
  }
};
struct ReluGradF {
  template <class T>
  T operator()(const T& y, const T& g) const {
    if constexpr (std::is_arithmetic_v<T>)
      return y > T(0) ? g : T(0);
    else
      return xsimd::select(y > T(0), g, T(0));
  }
};
struct MaxF {
  template <class T>
  T operator()(const T& a, const T& b) const {
    return xsimd::max(a, b);
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

}  // namespace tapeflow::cpu
