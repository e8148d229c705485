// Rounding and floor division: floor, ceil, round, floordiv, floormod; public
// functions and gradient rules.
#include "core/op_error.hpp"
#include "ops/apply.hpp"
#include "ops/elementwise_ops.hpp"
#include "ops/shape_ops.hpp"
#include "tapeflow/autograd.hpp"
#include "tapeflow/creation.hpp"
#include "tapeflow/ops/math.hpp"
#include "tapeflow/ops/reduce.hpp"
#include "tapeflow/ops/shape.hpp"

namespace tapeflow {
namespace {

/** Rounding of whole numbers (integers, bools) is the identity. */
template <class Op>
Tensor rounded(const Tensor& x) {
  if (x.defined() && (is_integral(x.dtype()) || x.dtype() == bool_))
    return value_of(x);
  return apply(Op{}, {x});
}

/**
 * Integer division by zero has no result: a ValueError naming the first zero
 * divisor's index (as TensorFlow's and PyTorch's CPU kernels refuse it) rather
 * than a quotient made up by the kernel. One count of the divisor's nonzeros
 * read back to the host, and only for integer operands.
 */
void check_divisor(const Tensor& y, const Shape& out_shape, const char* op) {
  NoGradGuard no_grad;
  if (all(y).item<bool>()) return;
  const Tensor zero = reshape(equal(y, scalar_like(y, 0.0)), {-1});
  const int64_t at = argmax(cast(zero, int32)).item<int64_t>();
  throw op_error<ValueError>(op, "expected nonzero divisors for ",
                             dtype_name(y.dtype()), " operands (output ",
                             out_shape.str(), "), got 0 at flat index ", at,
                             " of the divisor ", y.shape().str());
}

/** floordiv and floormod: promoted operands, integer divisors checked. */
template <class Op>
Tensor floor_division(const Tensor& x, const Tensor& y) {
  auto [a, b] = arithmetic_pair(x, y, Op::name);
  if (is_integral(b.dtype()))
    check_divisor(b, broadcast_shapes(a.shape(), b.shape(), Op::name),
                  Op::name);
  return apply(Op{}, {a, b});
}

}  // namespace

Tensor floor(const Tensor& x) {
  return rounded<Floor>(x);
}
Grads Floor::vjp(const VjpArgs& a) const {
  return {zeros_like(a.grad)};  // zero wherever it is defined, as PyTorch's
}

Tensor ceil(const Tensor& x) {
  return rounded<Ceil>(x);
}
Grads Ceil::vjp(const VjpArgs& a) const {
  return {zeros_like(a.grad)};
}

Tensor round(const Tensor& x) {
  return rounded<Round>(x);
}
Grads Round::vjp(const VjpArgs& a) const {
  return {zeros_like(a.grad)};
}

Tensor floordiv(const Tensor& x, const Tensor& y) {
  return floor_division<FloorDiv>(x, y);
}
Grads FloorDiv::vjp(const VjpArgs& a) const {
  return {a.needs(0) ? zeros_like(a.grad) : Tensor(),
          a.needs(1) ? zeros_like(a.grad) : Tensor()};
}

Tensor floormod(const Tensor& x, const Tensor& y) {
  return floor_division<FloorMod>(x, y);
}
Grads FloorMod::vjp(const VjpArgs& a) const {
  // x - floordiv(x, y) * y, the quotient piecewise constant (TensorFlow's).
  return {a.grad,
          a.needs(1) ? neg(a.grad * floordiv(a.x(0), a.x(1))) : Tensor()};
}

}  // namespace tapeflow
