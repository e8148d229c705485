// Binary math, comparisons and where: public functions and gradient rules.
#include <cmath>

#include "core/checked.hpp"
#include "core/op_error.hpp"
#include "ops/apply.hpp"
#include "ops/composite.hpp"
#include "ops/elementwise_ops.hpp"
#include "tapeflow/autograd.hpp"
#include "tapeflow/creation.hpp"
#include "tapeflow/ops/math.hpp"
#include "tapeflow/ops/reduce.hpp"
#include "tapeflow/ops/shape.hpp"

namespace tapeflow {

Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op) {
  if (a == b) return a;
  const int64_t r = std::max(a.size(), b.size());
  Shape out;
  out.resize(r);
  for (int64_t i = 0; i < r; ++i) {
    const int64_t da = i < r - a.size() ? 1 : a[i - (r - a.size())];
    const int64_t db = i < r - b.size() ? 1 : b[i - (r - b.size())];
    if (da != db && da != 1 && db != 1)
      throw op_error<ShapeError>(op, "expected broadcastable shapes, got ",
                                 a.str(), " and ", b.str());
    out[i] = da == 1 ? db : da;
  }
  return out;
}

TensorSpec Where::infer(Inputs in) const {
  if (is_string(in[0].dtype()))
    throw op_error<DTypeError>(name,
                               "expected a bool or numeric condition, got "
                               "string");
  const Shape s = broadcast_shapes(in[0].shape(), in[1].shape(), name);
  return {broadcast_shapes(s, in[2].shape(), name), in[1].dtype()};
}

std::pair<Tensor, Tensor> promote_pair(const Tensor& x, const Tensor& y,
                                       const char* op) {
  if (!x.defined() || !y.defined())
    throw op_error<ValueError>(op,
                               "expected defined tensors, got an empty handle");
  if (is_string(x.dtype()) != is_string(y.dtype()))
    throw op_error<DTypeError>(op, "expected two strings or two numbers, got ",
                               dtype_name(x.dtype()), " and ",
                               dtype_name(y.dtype()));
  const DType t = promote(x.dtype(), y.dtype());
  return {cast(x, t), cast(y, t)};
}

Tensor scalar_like(const Tensor& x, double value, const char* op) {
  if (is_string(x.dtype()))
    throw op_error<DTypeError>(op, "expected a numeric tensor, got string");
  // An integer tensor meets a fractional scalar in float32, as in PyTorch;
  // an integral one its integer dtype must hold (NumPy 2 refuses 1e10 for
  // int32 rather than wrap it).
  const DType t = is_floating(x.dtype()) || value == std::floor(value)
                      ? x.dtype()
                      : float32;
  const DType dtype = t == bool_ ? int64 : t;
  check_representable(value, dtype, op);
  return scalar(value, dtype, x.device());
}

std::pair<Tensor, Tensor> arithmetic_pair(const Tensor& x, const Tensor& y,
                                          const char* op) {
  auto [a, b] = promote_pair(x, y, op);
  if (a.dtype() == bool_) return {cast(a, int32), cast(b, int32)};
  return {a, b};
}

/** x as bool_ (nonzero), strings as they are: the op then names itself. */
Tensor truth(const Tensor& x) {
  return is_string(x.dtype()) ? x : cast(x, bool_);
}

namespace {
template <class Op>
Tensor binary(const Tensor& x, const Tensor& y) {
  if (x.defined() && y.defined() && x.dtype() == y.dtype())
    return apply(Op{}, {x, y});
  auto [a, b] = promote_pair(x, y, Op::name);
  return apply(Op{}, {a, b});
}
template <class Op>
Tensor arithmetic(const Tensor& x, const Tensor& y) {
  if (x.defined() && y.defined() && x.dtype() == y.dtype() &&
      x.dtype() != bool_)
    return apply(Op{}, {x, y});
  auto [a, b] = arithmetic_pair(x, y, Op::name);
  return apply(Op{}, {a, b});
}
Tensor zeros_of(const Tensor& like) {
  return scalar_like(like, 0.0);
}
}  // namespace

Tensor add(const Tensor& x, const Tensor& y) {
  return arithmetic<Add>(x, y);
}
Grads Add::vjp(const VjpArgs& a) const {
  return {a.grad, a.grad};
}

Tensor sub(const Tensor& x, const Tensor& y) {
  return arithmetic<Sub>(x, y);
}
Grads Sub::vjp(const VjpArgs& a) const {
  return {a.grad, a.needs(1) ? neg(a.grad) : Tensor()};
}

Tensor mul(const Tensor& x, const Tensor& y) {
  return arithmetic<Mul>(x, y);
}
Grads Mul::vjp(const VjpArgs& a) const {
  return {a.needs(0) ? a.grad * a.x(1) : Tensor(),
          a.needs(1) ? a.grad * a.x(0) : Tensor()};
}

namespace {
/**
 * x and y in the floating dtype div and pow compute in: an integer operand
 * meets a float64 one in float64 (through float32 on its own it lost the
 * digits past 2^24, and an odd exponent became even).
 */
std::pair<Tensor, Tensor> common_floating(const Tensor& x, const Tensor& y) {
  if (!x.defined() || !y.defined() || is_string(x.dtype()) ||
      is_string(y.dtype()))
    return {x, y};  // the op names itself in the error
  const DType t = floating_of(promote(x.dtype(), y.dtype()));
  return {x.dtype() == t ? x : cast(x, t), y.dtype() == t ? y : cast(y, t)};
}
}  // namespace

Tensor div(const Tensor& x, const Tensor& y) {
  auto [fx, fy] = common_floating(x, y);
  return binary<Div>(fx, fy);
}
Grads Div::vjp(const VjpArgs& a) const {
  const Tensor gx = a.grad / a.x(1);
  return {gx, a.needs(1) ? neg(gx * a.x(0) / a.x(1)) : Tensor()};
}

Tensor pow(const Tensor& x, const Tensor& y) {
  auto [fx, fy] = common_floating(x, y);
  return binary<Pow>(fx, fy);
}
Tensor pow(const Tensor& x, double exponent) {
  const Tensor fx = to_floating(x);
  return pow(fx, scalar_like(fx, exponent));
}
Grads Pow::vjp(const VjpArgs& a) const {
  const Tensor& x = a.x(0);
  const Tensor& y = a.x(1);
  const Tensor gx = a.needs(0) ? a.grad * y * pow(x, y - 1.0) : Tensor();
  if (!a.needs(1)) return {gx, Tensor()};
  // d/dy x**y = x**y log x, taken as 0 where x <= 0 (as TensorFlow does)
  const Tensor positive = x > zeros_of(x);
  const Tensor log_x = log(where(positive, x, scalar_like(x, 1.0)));
  return {gx, a.grad * a.output() * where(positive, log_x, zeros_of(x))};
}

Tensor atan2(const Tensor& y, const Tensor& x) {
  auto [fy, fx] = common_floating(y, x);
  return binary<Atan2>(fy, fx);
}
Grads Atan2::vjp(const VjpArgs& a) const {
  // d/dy = x / (x^2 + y^2), d/dx = -y / (x^2 + y^2); NaN at the origin.
  const Tensor &y = a.x(0), &x = a.x(1);
  const Tensor g = a.grad / (square(x) + square(y));
  return {a.needs(0) ? g * x : Tensor(), a.needs(1) ? neg(g * y) : Tensor()};
}

Tensor minimum(const Tensor& x, const Tensor& y) {
  return binary<Minimum>(x, y);
}
Grads Minimum::vjp(const VjpArgs& a) const {
  // The forward's pick: x on ties and where x is NaN, y where only y is.
  const Tensor x_wins = logical_or(a.x(0) <= a.x(1), not_equal(a.x(0), a.x(0)));
  return {a.needs(0) ? where(x_wins, a.grad, zeros_of(a.grad)) : Tensor(),
          a.needs(1) ? where(x_wins, zeros_of(a.grad), a.grad) : Tensor()};
}

Tensor maximum(const Tensor& x, const Tensor& y) {
  return binary<Maximum>(x, y);
}
Grads Maximum::vjp(const VjpArgs& a) const {
  // The forward's pick: x on ties and where x is NaN, y where only y is.
  const Tensor x_wins = logical_or(a.x(0) >= a.x(1), not_equal(a.x(0), a.x(0)));
  return {a.needs(0) ? where(x_wins, a.grad, zeros_of(a.grad)) : Tensor(),
          a.needs(1) ? where(x_wins, zeros_of(a.grad), a.grad) : Tensor()};
}

namespace {

/**
 * lo > hi anywhere would silently clip to hi there: a ValueError naming the
 * first such pair. One comparison, reduced to a host bool: clip with tensor
 * bounds is a preprocessing op, not a per-element hot path.
 */
void check_bounds_ordered(const Tensor& lo, const Tensor& hi) {
  const Shape both = broadcast_shapes(lo.shape(), hi.shape(), "clip");
  NoGradGuard no_grad;
  const Tensor crossed = reshape(greater(lo, hi).cast(int32), {-1});
  if (crossed.numel() == 0 || max(crossed).item<int32_t>() == 0) return;
  const int64_t at = argmax(crossed).item<int64_t>();
  const auto value_at = [&](const Tensor& t) {
    return reshape(broadcast_to(t.cast(float64), both), {-1})
        .to_vector<double>()[at];
  };
  throw op_error<ValueError>(
      "clip", "expected lo <= hi, got lo = ", value_at(lo),
      " > hi = ", value_at(hi), " at flat index ", at, " of ", both.str());
}

}  // namespace

Tensor clip(const Tensor& x, const Tensor& lo, const Tensor& hi) {
  return composite("clip", [&] {
    check_bounds_ordered(lo, hi);
    return minimum(maximum(x, lo), hi);
  });
}
Tensor clip(const Tensor& x, double lo, double hi) {
  if (lo > hi)
    throw op_error<ValueError>("clip", "expected lo <= hi, got lo = ", lo,
                               " > hi = ", hi);
  return composite("clip", [&] {
    return minimum(maximum(x, scalar_like(x, lo)), scalar_like(x, hi));
  });
}

Tensor equal(const Tensor& x, const Tensor& y) {
  return binary<Equal>(x, y);
}
Tensor not_equal(const Tensor& x, const Tensor& y) {
  return binary<NotEqual>(x, y);
}
Tensor less(const Tensor& x, const Tensor& y) {
  return binary<Less>(x, y);
}
Tensor less_equal(const Tensor& x, const Tensor& y) {
  return binary<LessEqual>(x, y);
}
Tensor greater(const Tensor& x, const Tensor& y) {
  return binary<Greater>(x, y);
}
Tensor greater_equal(const Tensor& x, const Tensor& y) {
  return binary<GreaterEqual>(x, y);
}
Tensor logical_and(const Tensor& x, const Tensor& y) {
  return apply(LogicalAnd{}, {truth(x), truth(y)});
}
Tensor logical_or(const Tensor& x, const Tensor& y) {
  return apply(LogicalOr{}, {truth(x), truth(y)});
}

Tensor where(const Tensor& cond, const Tensor& x, const Tensor& y) {
  auto [a, b] = promote_pair(x, y, "where");
  return apply(Where{}, {truth(cond), a, b});
}
Grads Where::vjp(const VjpArgs& a) const {
  const Tensor& c = a.x(0);
  return {Tensor(), a.needs(1) ? where(c, a.grad, zeros_of(a.grad)) : Tensor(),
          a.needs(2) ? where(c, zeros_of(a.grad), a.grad) : Tensor()};
}

Tensor operator+(const Tensor& x, const Tensor& y) {
  return add(x, y);
}
Tensor operator-(const Tensor& x, const Tensor& y) {
  return sub(x, y);
}
Tensor operator*(const Tensor& x, const Tensor& y) {
  return mul(x, y);
}
Tensor operator/(const Tensor& x, const Tensor& y) {
  return div(x, y);
}
Tensor operator-(const Tensor& x) {
  return neg(x);
}
Tensor operator+(const Tensor& x, double y) {
  return add(x, scalar_like(x, y, "add"));
}
Tensor operator-(const Tensor& x, double y) {
  return sub(x, scalar_like(x, y, "sub"));
}
Tensor operator*(const Tensor& x, double y) {
  return mul(x, scalar_like(x, y, "mul"));
}
Tensor operator/(const Tensor& x, double y) {
  return div(x, scalar_like(x, y, "div"));
}
Tensor operator+(double x, const Tensor& y) {
  return add(scalar_like(y, x, "add"), y);
}
Tensor operator-(double x, const Tensor& y) {
  return sub(scalar_like(y, x, "sub"), y);
}
Tensor operator*(double x, const Tensor& y) {
  return mul(scalar_like(y, x, "mul"), y);
}
Tensor operator/(double x, const Tensor& y) {
  return div(scalar_like(y, x, "div"), y);
}
Tensor operator==(const Tensor& x, const Tensor& y) {
  return equal(x, y);
}
Tensor operator!=(const Tensor& x, const Tensor& y) {
  return not_equal(x, y);
}
Tensor operator<(const Tensor& x, const Tensor& y) {
  return less(x, y);
}
Tensor operator<=(const Tensor& x, const Tensor& y) {
  return less_equal(x, y);
}
Tensor operator>(const Tensor& x, const Tensor& y) {
  return greater(x, y);
}
Tensor operator>=(const Tensor& x, const Tensor& y) {
  return greater_equal(x, y);
}
Tensor operator&&(const Tensor& x, const Tensor& y) {
  return logical_and(x, y);
}
Tensor operator||(const Tensor& x, const Tensor& y) {
  return logical_or(x, y);
}
Tensor operator!(const Tensor& x) {
  return logical_not(x);
}

}  // namespace tapeflow
