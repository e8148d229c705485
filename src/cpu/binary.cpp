#include "core/dtype_dispatch.hpp"
#include "cpu/elementwise_rows.hpp"
#include "cpu/functors.hpp"
#include "cpu/string_kernels.hpp"
#include "ops/elementwise_ops.hpp"

namespace tapeflow::cpu {
namespace {

template <class Op, class F>
void arithmetic(const Op&, Inputs in, const Outputs& outs) {
  Tensor& out = outs[0];
  if constexpr (takes_strings<Op>) {  // add: concatenation
    if (is_string(out.dtype()))
      return strings::binary<std::string>(
          in[0], in[1], out,
          [](const std::string& a, const std::string& b) { return a + b; });
  }
  dispatch_numeric(in[0].dtype(), Op::name, [&](auto tag) {
    using T = decltype(tag);
    binary_kernel<T, T>(in[0], in[1], out, F{});
  });
}
template <class Op, class F>
void floating(const Op&, Inputs in, const Outputs& outs) {
  Tensor& out = outs[0];
  dispatch_floating(in[0].dtype(), Op::name, [&](auto tag) {
    using T = decltype(tag);
    binary_kernel<T, T>(in[0], in[1], out, F{});
  });
}
template <class Op, class F>
void compare(const Op&, Inputs in, const Outputs& outs) {
  Tensor& out = outs[0];
  if constexpr (takes_strings<Op>) {  // equal, not_equal
    if (is_string(in[0].dtype()))
      return strings::binary<uint8_t>(
          in[0], in[1], out, [](const std::string& a, const std::string& b) {
            return uint8_t((a == b) == std::is_same_v<Op, Equal>);
          });
  }
  dispatch_all(in[0].dtype(), Op::name, [&](auto tag) {
    binary_kernel<decltype(tag), uint8_t>(in[0], in[1], out, F{});
  });
}
template <class Op, class F>
void logical(const Op&, Inputs in, const Outputs& outs) {
  Tensor& out = outs[0];
  binary_kernel<uint8_t, uint8_t>(in[0], in[1], out, F{});
}

void where(const Where&, Inputs in, const Outputs& outs) {
  Tensor& out = outs[0];
  if (is_string(out.dtype())) return strings::where(in[0], in[1], in[2], out);
  dispatch_all(in[1].dtype(), Where::name, [&](auto tag) {
    using T = decltype(tag);
    const uint8_t* c = static_cast<const uint8_t*>(in[0].raw_data());
    const T* a = static_cast<const T*>(in[1].raw_data());
    const T* b = static_cast<const T*>(in[2].raw_data());
    T* o = static_cast<T*>(out.raw_data());
    run_elementwise<4>(out, {&in[0], &in[1], &in[2]},
                       [&](const auto& off, int64_t n, const auto& st) {
                         if (st[0] == 1 && st[1] == 1 && st[2] == 1 &&
                             st[3] == 1) {  // a loop the compiler vectorizes
                           const uint8_t* pc = c + off[1];
                           const T* pa = a + off[2];
                           const T* pb = b + off[3];
                           T* po = o + off[0];
                           for (int64_t i = 0; i < n; ++i)
                             po[i] = pc[i] ? pa[i] : pb[i];
                           return;
                         }
                         for (int64_t i = 0; i < n; ++i)
                           o[off[0] + i * st[0]] = c[off[1] + i * st[1]]
                                                       ? a[off[2] + i * st[2]]
                                                       : b[off[3] + i * st[3]];
                       });
  });
}

}  // namespace

void register_binary(Registry& r) {
  constexpr auto cpu = DeviceType::cpu;
  r.set<Add>(cpu, arithmetic<Add, AddF>, "xsimd");
  r.set<Sub>(cpu, arithmetic<Sub, SubF>, "xsimd");
  r.set<Mul>(cpu, arithmetic<Mul, MulF>, "xsimd");
  r.set<Div>(cpu, floating<Div, DivF>, "xsimd");
  r.set<Pow>(cpu, floating<Pow, PowF>, "xsimd");
  r.set<FloorDiv>(cpu, arithmetic<FloorDiv, FloorDivF>, "xsimd");
  r.set<FloorMod>(cpu, arithmetic<FloorMod, FloorModF>, "xsimd");
  r.set<Atan2>(cpu, floating<Atan2, Atan2F>, "xsimd");
  r.set<Minimum>(cpu, arithmetic<Minimum, MinF>, "xsimd");
  r.set<Maximum>(cpu, arithmetic<Maximum, MaxF>, "xsimd");
  r.set<ReluGrad>(cpu, arithmetic<ReluGrad, ReluGradF>, "xsimd");
  r.set<TanhGrad>(cpu, floating<TanhGrad, TanhGradF>, "xsimd");
  r.set<SigmoidGrad>(cpu, floating<SigmoidGrad, SigmoidGradF>, "xsimd");
  r.set<Equal>(cpu, compare<Equal, EqF>, "xsimd");
  r.set<NotEqual>(cpu, compare<NotEqual, NeF>, "xsimd");
  r.set<Less>(cpu, compare<Less, LtF>, "xsimd");
  r.set<LessEqual>(cpu, compare<LessEqual, LeF>, "xsimd");
  r.set<Greater>(cpu, compare<Greater, GtF>, "xsimd");
  r.set<GreaterEqual>(cpu, compare<GreaterEqual, GeF>, "xsimd");
  r.set<LogicalAnd>(cpu, logical<LogicalAnd, AndF>, "xsimd");
  r.set<LogicalOr>(cpu, logical<LogicalOr, OrF>, "xsimd");
  r.set<Where>(cpu, where, "xsimd");
}

}  // namespace tapeflow::cpu
