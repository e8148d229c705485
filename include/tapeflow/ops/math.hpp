#pragma once
#include "tapeflow/core/tensor.hpp"

// Elementwise math. Binary ops broadcast NumPy-style and promote dtypes
// (see promote() in core/dtype.hpp); float-only functions (exp, log, ...)
// compute integer inputs in float32. A double operand takes the tensor's dtype.
namespace tapeflow {

/** x + y */ Tensor add(const Tensor& x, const Tensor& y);
/** x - y */ Tensor sub(const Tensor& x, const Tensor& y);
/** x * y */ Tensor mul(const Tensor& x, const Tensor& y);
/** x / y (true division: integer inputs give float32) */
Tensor div(const Tensor& x, const Tensor& y);
/** x ** y */ Tensor pow(const Tensor& x, const Tensor& y);
Tensor pow(const Tensor& x, double exponent);
/**
 * Elementwise min/max, NaN where either is NaN (NumPy, PyTorch); gradient
 * goes to the operand picked: x on ties and where x is NaN.
 */
Tensor minimum(const Tensor& x, const Tensor& y);
Tensor maximum(const Tensor& x, const Tensor& y);

/** -x */ Tensor neg(const Tensor& x);
/** e**x */ Tensor exp(const Tensor& x);
/** e**x - 1, accurate near 0. */ Tensor expm1(const Tensor& x);
/** log(1 + x), accurate near 0. */ Tensor log1p(const Tensor& x);
/** The error function. */ Tensor erf(const Tensor& x);
/** Arctangent, in (-pi/2, pi/2). */ Tensor atan(const Tensor& x);
/** Natural logarithm. */ Tensor log(const Tensor& x);
Tensor sqrt(const Tensor& x);
/** 1 / sqrt(x) */ Tensor rsqrt(const Tensor& x);
Tensor abs(const Tensor& x);
/** -1, 0 or 1. */ Tensor sign(const Tensor& x);
/** x * x */ Tensor square(const Tensor& x);
Tensor sin(const Tensor& x);
Tensor cos(const Tensor& x);
Tensor tanh(const Tensor& x);
/** 1 / (1 + e**-x) */ Tensor sigmoid(const Tensor& x);
/** max(x, 0); NaN stays NaN, as in PyTorch. */ Tensor relu(const Tensor& x);
/**
 * Rounding to a whole number: down, up, and to the nearest with ties to even
 * (tf.math.round, torch.round: round(2.5) is 2). -0, infinities and NaN stay
 * as they are; integers and bools are returned unchanged. The gradient is
 * zero (PyTorch's; TensorFlow's is None).
 */
Tensor floor(const Tensor& x);
Tensor ceil(const Tensor& x);
Tensor round(const Tensor& x);
/**
 * Floor division and its remainder (tf.math.floordiv and tf.math.floormod,
 * Python's // and %): the quotient rounds toward -inf and the remainder has
 * the divisor's sign, x = floordiv(x, y) * y + floormod(x, y). Floats follow
 * Python (1 // 0.1 is 9, floormod(-1, 3) is 2, a zero divisor gives +-inf
 * or NaN); an integer zero divisor is a ValueError naming its index, and
 * INT_MIN // -1 wraps to INT_MIN, as in NumPy. floormod's gradient is
 * (1, -floordiv(x, y)), floordiv's zero.
 */
Tensor floordiv(const Tensor& x, const Tensor& y);
Tensor floormod(const Tensor& x, const Tensor& y);
/**
 * The angle of the point (x, y) in [-pi, pi], with atan2's signed zeros
 * (std::atan2, tf.math.atan2); the gradient is NaN at the origin.
 */
Tensor atan2(const Tensor& y, const Tensor& x);
/**
 * Float classification into bool_ tensors (tf.math.is_nan, is_inf,
 * is_finite); integers and bools are finite and never NaN.
 */
Tensor is_nan(const Tensor& x);
Tensor is_inf(const Tensor& x);
Tensor is_finite(const Tensor& x);
/** clip_by_value: min(max(x, lo), hi), NaN where x is NaN. */
Tensor clip(const Tensor& x, double lo, double hi);
Tensor clip(const Tensor& x, const Tensor& lo, const Tensor& hi);

/** Comparisons give bool_ tensors and have no gradient. */
Tensor equal(const Tensor& x, const Tensor& y);
Tensor not_equal(const Tensor& x, const Tensor& y);
Tensor less(const Tensor& x, const Tensor& y);
Tensor less_equal(const Tensor& x, const Tensor& y);
Tensor greater(const Tensor& x, const Tensor& y);
Tensor greater_equal(const Tensor& x, const Tensor& y);
Tensor logical_and(const Tensor& x, const Tensor& y);
Tensor logical_or(const Tensor& x, const Tensor& y);
Tensor logical_not(const Tensor& x);
/** x where cond is true, else y (all three broadcast). */
Tensor where(const Tensor& cond, const Tensor& x, const Tensor& y);
/**
 * Conversion to another dtype (gradient flows between float types). Floats
 * into an integer dtype truncate toward zero and saturate: NaN becomes 0, a
 * value beyond the range its nearest bound. Into bool, non-zero (NaN too) is
 * true; integers into narrower integers wrap, as in NumPy.
 */
Tensor cast(const Tensor& x, DType dtype);

Tensor operator+(const Tensor& x, const Tensor& y);
Tensor operator-(const Tensor& x, const Tensor& y);
Tensor operator*(const Tensor& x, const Tensor& y);
Tensor operator/(const Tensor& x, const Tensor& y);
Tensor operator-(const Tensor& x);
Tensor operator+(const Tensor& x, double y);
Tensor operator-(const Tensor& x, double y);
Tensor operator*(const Tensor& x, double y);
Tensor operator/(const Tensor& x, double y);
Tensor operator+(double x, const Tensor& y);
Tensor operator-(double x, const Tensor& y);
Tensor operator*(double x, const Tensor& y);
Tensor operator/(double x, const Tensor& y);
Tensor operator==(const Tensor& x, const Tensor& y);
Tensor operator!=(const Tensor& x, const Tensor& y);
Tensor operator<(const Tensor& x, const Tensor& y);
Tensor operator<=(const Tensor& x, const Tensor& y);
Tensor operator>(const Tensor& x, const Tensor& y);
Tensor operator>=(const Tensor& x, const Tensor& y);
Tensor operator&&(const Tensor& x, const Tensor& y);
Tensor operator||(const Tensor& x, const Tensor& y);
Tensor operator!(const Tensor& x);

/**
 * A rank-0 tensor of `x`'s dtype and device holding `value` (float32 for a
 * fractional value and an integer x); ValueError naming `op` when x's
 * integer dtype cannot hold an integral value.
 */
Tensor scalar_like(const Tensor& x, double value,
                   const char* op = "scalar_like");

}  // namespace tapeflow
