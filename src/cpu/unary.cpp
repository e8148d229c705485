#include <limits>
#include <numbers>

#include "core/dtype_dispatch.hpp"
#include "cpu/elementwise_rows.hpp"
#include "cpu/functors.hpp"
#include "cpu/tanh_float.hpp"
#include "ops/elementwise_ops.hpp"

namespace tapeflow::cpu {
namespace {

/** Kernel for a float-only unary op computing f on scalars and batches. */
template <class Op, class F>
void floating_kernel(const Op&, Inputs in, const Outputs& out) {
  dispatch_floating(in[0].dtype(), Op::name, [&](auto tag) {
    unary_kernel<decltype(tag)>(in[0], out[0], F{});
  });
}
/** Kernel for a unary op on any numeric dtype. */
template <class Op, class F>
void numeric_kernel(const Op&, Inputs in, const Outputs& out) {
  dispatch_numeric(in[0].dtype(), Op::name, [&](auto tag) {
    unary_kernel<decltype(tag)>(in[0], out[0], F{});
  });
}
// The kernel of Op for the math f (a captureless lambda taking a scalar or
// an xsimd batch): a new op is one line of register_unary.
template <class Op, class F>
constexpr Kernel<Op> floating(F) {
  return floating_kernel<Op, F>;
}
template <class Op, class F>
constexpr Kernel<Op> numeric(F) {
  return numeric_kernel<Op, F>;
}
void logical_not(const LogicalNot&, Inputs in, const Outputs& out) {
  unary_kernel<uint8_t>(in[0], out[0], NotF{});
}

/** 1 in the type of a, a scalar or a batch. */
template <class T>
T one(const T&) {
  return T(1);
}

// Where xsimd's batch math leaves std's results (a scalar goes to std).
/**
 * log: xsimd's double log reads a subnormal's exponent field as it is
 * (log(1e-310) came out -746.5, not -713.8); such lanes are scaled by 2^54
 * first.
 */
template <class T>
T log_of(const T& a) {
  if constexpr (!std::is_arithmetic_v<T>) {
    if constexpr (std::is_same_v<typename T::value_type, double>) {
      const auto tiny =
          (a > T(0)) & (a < T(std::numeric_limits<double>::min()));
      if (xsimd::any(tiny)) [[unlikely]]
        return xsimd::select(
            tiny, xsimd::log(a * T(0x1p54)) - T(54 * std::numbers::ln2),
            xsimd::log(a));
    }
  }
  return xsimd::log(a);
}
/** erf: xsimd's double erf is NaN from |a| ~ 1e154 (a * a overflows). */
template <class T>
T erf_of(const T& a) {
  // erf(6) is 1 to within 2e-17: the rounded result from there on.
  return pick(xsimd::abs(a) > T(6), pick(a > T(0), T(1), T(-1)), xsimd::erf(a));
}
/** f(a) that keeps a's zero and its sign (xsimd's expm1 and log1p give +0 for
 * -0). */
template <class T, class F>
T zero_kept(const T& a, F f) {
  return pick(a == T(0), a, f(a));
}

}  // namespace

void register_unary(Registry& r) {
  constexpr auto cpu = DeviceType::cpu;
  using xsimd::select;
  r.set<Neg>(cpu, numeric<Neg>([](auto a) { return wrapping_neg(a); }),
             "xsimd");
  r.set<Exp>(cpu, floating<Exp>([](auto a) { return xsimd::exp(a); }), "xsimd");
  r.set<Log>(cpu, floating<Log>([](auto a) { return log_of(a); }), "xsimd");
  r.set<Sqrt>(cpu, floating<Sqrt>([](auto a) { return xsimd::sqrt(a); }),
              "xsimd");
  r.set<Rsqrt>(cpu,
               floating<Rsqrt>([](auto a) { return one(a) / xsimd::sqrt(a); }),
               "xsimd");
  r.set<Abs>(cpu, numeric<Abs>([](auto a) {
               using T = decltype(a);
               if constexpr (std::is_integral_v<T>)
                 return a < 0 ? wrapping_neg(a) : a;  // |INT64_MIN| wraps
               else
                 return xsimd::abs(a);
             }),
             "xsimd");
  r.set<Sign>(
      cpu, numeric<Sign>([](auto a) {
        using T = decltype(a);
        // NaN stays NaN, as in TensorFlow and NumPy.
        if constexpr (std::is_arithmetic_v<T>) {
          const T s = static_cast<T>((a > T(0)) - (a < T(0)));
          return is_nan(a) ? a : s;
        } else {
          const T s = select(a > T(0), T(1), select(a < T(0), T(-1), T(0)));
          if constexpr (std::is_floating_point_v<typename T::value_type>)
            return pick(is_nan(a), a, s);
          else
            return s;
        }
      }),
      "xsimd");
  r.set<Square>(cpu, numeric<Square>([](auto a) { return MulF{}(a, a); }),
                "xsimd");
  r.set<Sin>(cpu, floating<Sin>([](auto a) { return xsimd::sin(a); }), "xsimd");
  r.set<Cos>(cpu, floating<Cos>([](auto a) { return xsimd::cos(a); }), "xsimd");
  r.set<Tanh>(cpu, floating<Tanh>([](auto a) { return cpu_tanh(a); }), "xsimd");
  r.set<Sigmoid>(cpu, floating<Sigmoid>([](auto a) { return cpu_sigmoid(a); }),
                 "xsimd");
  // NaN stays NaN, as in PyTorch (xsimd::max(a, 0) would give 0).
  r.set<Relu>(cpu, numeric<Relu>([](auto a) {
                using V = decltype(a);
                return pick(a <= V(0), V(0), a);
              }),
              "xsimd");
  r.set<Expm1>(cpu, floating<Expm1>([](auto a) {
                 return zero_kept(a, [](auto v) { return xsimd::expm1(v); });
               }),
               "xsimd");
  r.set<Log1p>(cpu, floating<Log1p>([](auto a) {
                 return zero_kept(a, [](auto v) { return xsimd::log1p(v); });
               }),
               "xsimd");
  r.set<Erf>(cpu, floating<Erf>([](auto a) { return erf_of(a); }), "xsimd");
  r.set<Atan>(cpu, floating<Atan>([](auto a) { return xsimd::atan(a); }),
              "xsimd");
  r.set<Floor>(cpu, floating<Floor>([](auto a) { return xsimd::floor(a); }),
               "xsimd");
  r.set<Ceil>(cpu, floating<Ceil>([](auto a) { return xsimd::ceil(a); }),
              "xsimd");
  // Ties to even: the default rounding mode, which nearbyint follows.
  r.set<Round>(cpu, floating<Round>([](auto a) { return xsimd::nearbyint(a); }),
               "xsimd");
  r.set<LogicalNot>(cpu, logical_not, "xsimd");
}

}  // namespace tapeflow::cpu
