// Reductions: public functions and gradient rules.
#include "tapeflow/ops/reduce.hpp"

#include <algorithm>
#include <limits>

#include "core/dtype_dispatch.hpp"
#include "core/op_error.hpp"
#include "ops/apply.hpp"
#include "ops/axes.hpp"
#include "ops/composite.hpp"
#include "ops/elementwise_ops.hpp"
#include "ops/reduce_ops.hpp"
#include "tapeflow/autograd.hpp"
#include "tapeflow/creation.hpp"
#include "tapeflow/ops/math.hpp"
#include "tapeflow/ops/shape.hpp"

namespace tapeflow {
namespace {

Shape normalize_axes(const Axes& axes, int64_t rank, const char* op) {
  std::vector<int64_t> v;
  if (axes.empty()) {
    for (int64_t i = 0; i < rank; ++i) v.push_back(i);
  }
  for (int64_t a : axes) v.push_back(normalize_axis(a, rank, op));
  std::sort(v.begin(), v.end());
  if (std::adjacent_find(v.begin(), v.end()) != v.end())
    throw op_error<ValueError>(op,
                               "expected distinct axes, got a repeated axis");
  return Shape(v);
}

template <class Op>
Tensor reduce(const Tensor& x, const Axes& axes, bool keepdims) {
  Op op;
  op.axes = normalize_axes(axes, x.rank(), Op::name);
  op.keepdims = keepdims;
  return apply(op, {x});
}

/** `t` (the output or its gradient) reshaped to the input rank. */
Tensor kept(const ReduceOp& op, const VjpArgs& a, const Tensor& t) {
  return reshape(t, op.kept_shape(a.input_shape()));
}

/**
 * Gradient of max/min: shared equally among the elements that attain it,
 * which for a NaN result are the NaNs (as PyTorch's evenly_distribute).
 */
Grads extreme_vjp(const ReduceOp& op, const VjpArgs& a) {
  const Tensor y = kept(op, a, a.output()), g = kept(op, a, a.grad);
  const Tensor& x = a.x();
  const Tensor both_nan = logical_and(not_equal(x, x), not_equal(y, y));
  const Tensor mask = cast(logical_or(equal(x, y), both_nan), x.dtype());
  const Tensor count = sum(mask, op.axes.to_vector(), true);
  return {mask * g / count};
}

}  // namespace

bool ReduceOp::reduces(int64_t axis) const {
  return std::find(axes.begin(), axes.end(), axis) != axes.end();
}

Shape ReduceOp::kept_shape(const Shape& in) const {
  Shape s = in;
  for (int64_t a : axes) s[a] = 1;
  return s;
}

TensorSpec ReduceOp::infer(Inputs in) const {
  if (keepdims) return {kept_shape(in[0].shape()), in[0].dtype()};
  Shape s;
  for (int64_t i = 0; i < in[0].rank(); ++i)
    if (!reduces(i)) s.push_back(in[0].shape()[i]);
  return {s, in[0].dtype()};
}

TensorSpec ArgReduce::infer(Inputs in) const {
  Shape s;
  for (int64_t i = 0; i < in[0].rank(); ++i)
    if (i != axis) s.push_back(in[0].shape()[i]);
  return {s, int64};
}

Tensor sum(const Tensor& x, const Axes& axes, bool keepdims) {
  // A bool_ sum is its count of trues, in int64 (NumPy's and TF's dtype).
  if (x.defined() && x.dtype() == bool_)
    return reduce<CountNonzero>(x, axes, keepdims);
  return reduce<Sum>(x, axes, keepdims);
}
Grads Sum::vjp(const VjpArgs& a) const {
  return {broadcast_to(kept(*this, a, a.grad), a.input_shape())};
}

Tensor mean(const Tensor& x, const Axes& axes, bool keepdims) {
  const Tensor fx = to_floating(x);
  const Shape norm = normalize_axes(axes, x.rank(), "mean");
  int64_t count = 1;
  for (int64_t a : norm) count *= x.shape()[a];
  return sum(fx, axes, keepdims) / static_cast<double>(count);
}

Tensor prod(const Tensor& x, const Axes& axes, bool keepdims) {
  const Tensor v = x.dtype() == bool_ ? cast(x, int64) : x;
  return reduce<Prod>(v, axes, keepdims);
}
Grads Prod::vjp(const VjpArgs& a) const {
  // d prod / d x_i is the product of the others, also where some x are 0.
  const Tensor y = kept(*this, a, a.output()), g = kept(*this, a, a.grad);
  const Tensor& x = a.x();
  const Tensor zero = scalar_like(x, 0.0), one = scalar_like(x, 1.0);
  const Tensor is_zero = equal(x, zero);
  const Tensor x_safe = where(is_zero, one, x);
  const Tensor zeros_count =
      sum(cast(is_zero, x.dtype()), axes.to_vector(), true);
  const Tensor others_nonzero = prod(x_safe, axes.to_vector(), true);
  const Tensor only_zero = logical_and(equal(zeros_count, one), is_zero);
  const Tensor d = where(equal(zeros_count, zero), y / x_safe,
                         where(only_zero, others_nonzero, zero));
  return {d * g};
}

Tensor max(const Tensor& x, const Axes& axes, bool keepdims) {
  return reduce<Max>(x, axes, keepdims);
}
Grads Max::vjp(const VjpArgs& a) const {
  return extreme_vjp(*this, a);
}

Tensor min(const Tensor& x, const Axes& axes, bool keepdims) {
  return reduce<Min>(x, axes, keepdims);
}
Grads Min::vjp(const VjpArgs& a) const {
  return extreme_vjp(*this, a);
}

namespace {
/**
 * An empty axis has no index to give, whether or not the output is empty
 * ((0, 0) over axis 0 included), as in TF and NumPy: checked before apply,
 * which runs no kernel for an empty output.
 */
template <class Op>
Tensor arg_reduce(const Tensor& x, int64_t axis) {
  const int64_t a = normalize_axis(axis, x.rank(), Op::name);
  if (x.shape()[a] == 0)
    throw op_error<ShapeError>(Op::name, "expected a non-empty axis, got axis ",
                               a, " of shape ", x.shape().str());
  return apply(Op{{a}}, {x});
}
}  // namespace

Tensor argmax(const Tensor& x, int64_t axis) {
  return arg_reduce<ArgMax>(x, axis);
}
Tensor argmin(const Tensor& x, int64_t axis) {
  return arg_reduce<ArgMin>(x, axis);
}

Tensor count_nonzero(const Tensor& x, const Axes& axes, bool keepdims) {
  // An int64 count: exact at any size, and 0 over an empty axis.
  return reduce<CountNonzero>(x, axes, keepdims);
}
Tensor any(const Tensor& x, const Axes& axes, bool keepdims) {
  return composite("any", [&] {
    const Tensor count = count_nonzero(x, axes, keepdims);
    return not_equal(count, scalar_like(count, 0.0));
  });
}
Tensor all(const Tensor& x, const Axes& axes, bool keepdims) {
  // Every element is nonzero where the count is the number reduced (which
  // for no elements is 0: true, as NumPy).
  return composite("all", [&] {
    const Tensor count = count_nonzero(x, axes, keepdims);
    const int64_t reduced = count.numel() ? x.numel() / count.numel() : 0;
    return equal(count, scalar_like(count, static_cast<double>(reduced)));
  });
}

Tensor logsumexp(const Tensor& x, const Axes& axes, bool keepdims) {
  if (!is_floating(x.dtype()))
    throw op_error<DTypeError>("logsumexp", "expected float32 or float64, got ",
                               dtype_name(x.dtype()));
  int64_t count = 1;
  for (int64_t a : normalize_axes(axes, x.rank(), "logsumexp"))
    count *= x.shape()[a];
  const double inf = std::numeric_limits<double>::infinity();
  if (count == 0) return sum(x, axes, keepdims) + scalar_like(x, -inf);
  // The maximum comes out first, so exp neither overflows nor meets
  // inf - inf; where it is not finite (all -inf, a +inf, a NaN) nothing
  // comes out and the sum gives the answer. The result does not depend on
  // it, so no gradient flows through it.
  return composite("logsumexp", [&] {
    const Tensor top = stop_gradient(max(x, axes, true));
    const Tensor zero = scalar_like(top, 0.0);
    const Tensor shift = where(equal(top - top, zero), top, zero);
    const Tensor total = sum(exp(x - shift), axes, keepdims);
    return log(total) + reshape(shift, total.shape());
  });
}

Tensor variance(const Tensor& x, const Axes& axes, bool keepdims) {
  if (is_string(x.dtype())) refuse_string("variance");
  normalize_axes(axes, x.rank(), "variance");
  return composite("variance", [&] {
    const Tensor fx = to_floating(x);
    const Tensor centered = fx - mean(fx, axes, true);
    return mean(centered * centered, axes, keepdims);
  });
}

Tensor stddev(const Tensor& x, const Axes& axes, bool keepdims) {
  if (is_string(x.dtype())) refuse_string("stddev");
  normalize_axes(axes, x.rank(), "stddev");
  return composite("stddev", [&] { return sqrt(variance(x, axes, keepdims)); });
}

TensorSpec Cumsum::infer(Inputs in) const {
  return {in[0].shape(), in[0].dtype()};
}

Tensor cumsum(const Tensor& x, int64_t axis, bool exclusive, bool reverse) {
  if (is_string(x.dtype())) refuse_string("cumsum");
  const int64_t a = normalize_axis(axis, x.rank(), "cumsum");
  const Tensor v = x.dtype() == bool_ ? cast(x, int64) : x;
  return apply(Cumsum{a, exclusive, reverse}, {v});
}
Grads Cumsum::vjp(const VjpArgs& a) const {
  return {cumsum(a.grad, axis, exclusive, !reverse)};
}

Tensor sum_to(const Tensor& x, const Shape& shape) {
  if (x.shape() == shape) return x;
  const int64_t lead = x.rank() - shape.size();
  if (lead < 0)
    throw ShapeError("[sum_to] expected a target of rank <= " +
                     std::to_string(x.rank()) + ", got " + shape.str());
  Axes axes;
  for (int64_t i = 0; i < x.rank(); ++i) {
    if (i < lead) {
      axes.push_back(i);
    } else if (shape[i - lead] == 1 && x.shape()[i] != 1) {
      axes.push_back(i);
    } else if (shape[i - lead] != x.shape()[i]) {
      throw ShapeError("[sum_to] expected " + x.shape().str() +
                       " to reduce to " + shape.str() + ", got a mismatch");
    }
  }
  return reshape(sum(x, axes, true), shape);
}

}  // namespace tapeflow
