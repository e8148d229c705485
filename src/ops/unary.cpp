// Unary math: public functions and their gradient rules.
#include <cmath>

#include "core/op_error.hpp"
#include "ops/apply.hpp"
#include "ops/elementwise_ops.hpp"
#include "ops/shape_ops.hpp"
#include "tapeflow/autograd.hpp"
#include "tapeflow/creation.hpp"
#include "tapeflow/ops/math.hpp"
#include "tapeflow/ops/shape.hpp"

namespace tapeflow {

Tensor to_floating(const Tensor& x) {
  // Strings pass: the op they reach names itself in the error.
  return is_floating(x.dtype()) || is_string(x.dtype()) ? x : cast(x, float32);
}

namespace {
/** Ops that also make sense for integers keep the dtype; bool -> int32. */
Tensor numeric(const Tensor& x) {
  return x.dtype() == bool_ ? cast(x, int32) : x;
}
}  // namespace

Tensor neg(const Tensor& x) {
  return apply(Neg{}, {numeric(x)});
}
Grads Neg::vjp(const VjpArgs& a) const {
  return {neg(a.grad)};
}

Tensor exp(const Tensor& x) {
  return apply(Exp{}, {to_floating(x)});
}
Grads Exp::vjp(const VjpArgs& a) const {
  return {a.grad * a.output()};
}

Tensor log(const Tensor& x) {
  return apply(Log{}, {to_floating(x)});
}
Grads Log::vjp(const VjpArgs& a) const {
  return {a.grad / a.x()};
}

Tensor sqrt(const Tensor& x) {
  return apply(Sqrt{}, {to_floating(x)});
}
Grads Sqrt::vjp(const VjpArgs& a) const {
  return {a.grad / (2.0 * a.output())};
}

Tensor rsqrt(const Tensor& x) {
  return apply(Rsqrt{}, {to_floating(x)});
}
Grads Rsqrt::vjp(const VjpArgs& a) const {
  return {-0.5 * a.grad * a.output() * a.output() * a.output()};
}

Tensor abs(const Tensor& x) {
  return apply(Abs{}, {numeric(x)});
}
Grads Abs::vjp(const VjpArgs& a) const {
  return {a.grad * sign(a.x())};
}

Tensor sign(const Tensor& x) {
  return apply(Sign{}, {numeric(x)});
}
Grads Sign::vjp(const VjpArgs& a) const {
  return {zeros_like(a.grad)};
}

Tensor square(const Tensor& x) {
  return apply(Square{}, {numeric(x)});
}
Grads Square::vjp(const VjpArgs& a) const {
  return {2.0 * a.grad * a.x()};
}

Tensor sin(const Tensor& x) {
  return apply(Sin{}, {to_floating(x)});
}
Grads Sin::vjp(const VjpArgs& a) const {
  return {a.grad * cos(a.x())};
}

Tensor cos(const Tensor& x) {
  return apply(Cos{}, {to_floating(x)});
}
Grads Cos::vjp(const VjpArgs& a) const {
  return {-(a.grad * sin(a.x()))};
}

Tensor tanh(const Tensor& x) {
  return apply(Tanh{}, {to_floating(x)});
}
Grads Tanh::vjp(const VjpArgs& a) const {
  return {apply(TanhGrad{}, {a.output(), a.grad})};
}
Grads TanhGrad::vjp(const VjpArgs& a) const {
  // d/dy of g (1 - y^2) is -2 y g; linear in g.
  const Tensor &y = a.x(0), &g = a.x(1);
  return {a.grad * g * y * -2.0, apply(TanhGrad{}, {y, a.grad})};
}

Tensor sigmoid(const Tensor& x) {
  return apply(Sigmoid{}, {to_floating(x)});
}
Grads Sigmoid::vjp(const VjpArgs& a) const {
  return {apply(SigmoidGrad{}, {a.output(), a.grad})};
}
Grads SigmoidGrad::vjp(const VjpArgs& a) const {
  // d/dy of g y (1 - y) is g (1 - 2y); linear in g.
  const Tensor &y = a.x(0), &g = a.x(1);
  return {a.grad * g * (1.0 - 2.0 * y), apply(SigmoidGrad{}, {y, a.grad})};
}

Tensor expm1(const Tensor& x) {
  return apply(Expm1{}, {to_floating(x)});
}
Grads Expm1::vjp(const VjpArgs& a) const {
  return {a.grad * (a.output() + 1.0)};
}

Tensor log1p(const Tensor& x) {
  return apply(Log1p{}, {to_floating(x)});
}
Grads Log1p::vjp(const VjpArgs& a) const {
  return {a.grad / (a.x() + 1.0)};
}

Tensor erf(const Tensor& x) {
  return apply(Erf{}, {to_floating(x)});
}
Grads Erf::vjp(const VjpArgs& a) const {
  // d/dx erf(x) = 2 / sqrt(pi) * exp(-x^2)
  return {a.grad * 1.1283791670955126 * exp(-square(a.x()))};
}

Tensor atan(const Tensor& x) {
  return apply(Atan{}, {to_floating(x)});
}
Grads Atan::vjp(const VjpArgs& a) const {
  return {a.grad / (square(a.x()) + 1.0)};
}

Tensor relu(const Tensor& x) {
  return apply(Relu{}, {numeric(x)});
}
Grads Relu::vjp(const VjpArgs& a) const {
  return {apply(ReluGrad{}, {a.output(), a.grad})};
}
Grads ReluGrad::vjp(const VjpArgs& a) const {
  // Linear in g; zero almost everywhere in y.
  return {Tensor(), apply(ReluGrad{}, {a.x(0), a.grad})};
}

namespace {
/**
 * A classification of float values into a bool_ tensor; integers and bools
 * are all finite numbers, `whole` for each of them.
 */
template <class F>
Tensor classify(const Tensor& x, const char* op, bool whole, F of_floats) {
  if (!x.defined() || is_string(x.dtype()))
    throw op_error<DTypeError>(op, "expected a numeric tensor, got ",
                               x.defined() ? "string" : "an empty handle");
  if (!is_floating(x.dtype()))
    return full(x.shape(), whole ? 1.0 : 0.0, bool_, x.device());
  return of_floats(x);
}
}  // namespace

Tensor is_nan(const Tensor& x) {
  return classify(x, "is_nan", false,
                  [](const Tensor& v) { return not_equal(v, v); });
}
Tensor is_inf(const Tensor& x) {
  return classify(x, "is_inf", false, [](const Tensor& v) {
    return equal(abs(v), scalar_like(v, INFINITY));
  });
}
Tensor is_finite(const Tensor& x) {
  // NaN compares false: neither less than inf nor finite.
  return classify(x, "is_finite", true, [](const Tensor& v) {
    return less(abs(v), scalar_like(v, INFINITY));
  });
}

Tensor logical_not(const Tensor& x) {
  return apply(LogicalNot{}, {truth(x)});
}

Tensor cast(const Tensor& x, DType dtype) {
  if (x.dtype() == dtype) return value_of(x);
  if (is_string(x.dtype()) || is_string(dtype))
    throw op_error<DTypeError>("cast", "expected numeric dtypes, got ",
                               dtype_name(x.dtype()), " to ", dtype_name(dtype),
                               " (tpf::strings::to_number parses text)");
  return apply(Cast{.dtype = dtype}, {x});
}
Grads Cast::vjp(const VjpArgs& a) const {
  const DType from = a.input_specs[0].dtype;
  if (!is_floating(from)) return {Tensor()};
  return {cast(a.grad, from)};
}

}  // namespace tapeflow
