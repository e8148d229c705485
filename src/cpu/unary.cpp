#include "core/dtype_dispatch.hpp"
#include "cpu/elementwise_rows.hpp"
#include "cpu/functors.hpp"
#include "ops/elementwise_ops.hpp"

namespace tapeflow::cpu {
namespace {

/** Kernel for a float-only unary op. */
template <class Op, class F>
void floating(const Op&, Inputs in, Outputs outs) {
  Tensor& out = outs[0];
  dispatch_floating(in[0].dtype(), Op::name, [&](auto tag) {
    unary_kernel<decltype(tag)>(in[0], out, F{});
  });
}
/** Kernel for a unary op on any numeric dtype. */
template <class Op, class F>
void numeric(const Op&, Inputs in, Outputs outs) {
  Tensor& out = outs[0];
  dispatch_numeric(in[0].dtype(), Op::name, [&](auto tag) {
    unary_kernel<decltype(tag)>(in[0], out, F{});
  });
}
void logical_not(const LogicalNot&, Inputs in, Outputs outs) {
  Tensor& out = outs[0];
  unary_kernel<uint8_t>(in[0], out, NotF{});
}

}  // namespace

void register_unary(Registry& r) {
  constexpr auto cpu = DeviceType::cpu;
  r.set<Neg>(cpu, numeric<Neg, NegF>, "xsimd");
  r.set<Exp>(cpu, floating<Exp, ExpF>, "xsimd");
  r.set<Log>(cpu, floating<Log, LogF>, "xsimd");
  r.set<Sqrt>(cpu, floating<Sqrt, SqrtF>, "xsimd");
  r.set<Rsqrt>(cpu, floating<Rsqrt, RsqrtF>, "xsimd");
  r.set<Abs>(cpu, numeric<Abs, AbsF>, "xsimd");
  r.set<Sign>(cpu, numeric<Sign, SignF>, "xsimd");
  r.set<Square>(cpu, numeric<Square, SquareF>, "xsimd");
  r.set<Sin>(cpu, floating<Sin, SinF>, "xsimd");
  r.set<Cos>(cpu, floating<Cos, CosF>, "xsimd");
  r.set<Tanh>(cpu, floating<Tanh, TanhF>, "xsimd");
  r.set<Sigmoid>(cpu, floating<Sigmoid, SigmoidF>, "xsimd");
  r.set<Relu>(cpu, numeric<Relu, ReluF>, "xsimd");
  r.set<Expm1>(cpu, floating<Expm1, Expm1F>, "xsimd");
  r.set<Log1p>(cpu, floating<Log1p, Log1pF>, "xsimd");
  r.set<Erf>(cpu, floating<Erf, ErfF>, "xsimd");
  r.set<LogicalNot>(cpu, logical_not, "xsimd");
}

}  // namespace tapeflow::cpu
