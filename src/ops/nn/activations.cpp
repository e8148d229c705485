// Activations: composites of the math ops (no rules or kernels of their own).
#include "tapeflow/nn/activations.hpp"

#include <cmath>

#include "core/op_error.hpp"
#include "ops/axes.hpp"
#include "ops/composite.hpp"
#include "ops/elementwise_ops.hpp"
#include "tapeflow/autograd.hpp"
#include "tapeflow/ops/math.hpp"
#include "tapeflow/ops/reduce.hpp"
#include "tapeflow/ops/shape.hpp"

namespace tapeflow::nn {
namespace {

Tensor zero_like(const Tensor& x) {
  return scalar_like(x, 0.0);
}

/** e**x - 1 for x <= 0; clamped so the unused branch never overflows. */
Tensor negative_part_expm1(const Tensor& x) {
  return expm1(minimum(x, zero_like(x)));
}

/** Softmax is defined on real numbers: float32 and float64, as in TF. */
void check_floating_logits(const Tensor& logits, const char* op) {
  if (!is_floating(logits.dtype()))
    throw op_error<DTypeError>(op, "expected float32 or float64 logits, got ",
                               dtype_name(logits.dtype()));
}

}  // namespace

Tensor relu(const Tensor& x) {
  return tapeflow::relu(x);
}

Tensor relu6(const Tensor& x) {
  // The bound first: minimum gives a tie to its first input, so at x = 6
  // the slope is 0, as TF's Relu6Grad has it (0 < x < 6 only).
  return composite(
      "relu6", [&] { return minimum(scalar_like(x, 6.0), tapeflow::relu(x)); });
}

Tensor crelu(const Tensor& x, int64_t axis) {
  // The output has x's rank: the axis is checked against x, not concat's
  // list of two.
  const int64_t a = normalize_axis(axis, x.rank(), "crelu");
  return composite("crelu", [&] {
    return concat({tapeflow::relu(x), tapeflow::relu(-x)}, a);
  });
}

Tensor elu(const Tensor& x, double alpha) {
  return composite("elu", [&] {
    return where(x > zero_like(x), x, alpha * negative_part_expm1(x));
  });
}

Tensor selu(const Tensor& x) {
  return composite("selu", [&] {
    constexpr double kAlpha = 1.6732632423543772848170429916717;
    constexpr double kScale = 1.0507009873554804934193349852946;
    return kScale * elu(x, kAlpha);
  });
}

Tensor softplus(const Tensor& x) {
  return composite("softplus", [&] {
    // log(1 + e**x) = max(x, 0) + log1p(e**-|x|), each side chosen by one
    // where (TF's form) so that the slope at 0 is sigmoid(0) = 0.5: max's
    // and abs's own slopes there (1 and 0) would add up to 1.
    const Tensor positive = x >= zero_like(x);
    return where(positive, x, zero_like(x)) +
           log1p(exp(where(positive, -x, x)));
  });
}

Tensor softsign(const Tensor& x) {
  return composite("softsign", [&] {
    // In floating point first: 1 + |x| wraps at the integer extremes.
    const Tensor fx = to_floating(x);
    return fx / (1.0 + abs(fx));
  });
}

Tensor sigmoid(const Tensor& x) {
  return tapeflow::sigmoid(x);
}

Tensor tanh(const Tensor& x) {
  return tapeflow::tanh(x);
}

Tensor leaky_relu(const Tensor& x, double alpha) {
  return composite("leaky_relu",
                   [&] { return where(x > zero_like(x), x, alpha * x); });
}

Tensor gelu(const Tensor& x, bool approximate) {
  return composite("gelu", [&] {
    if (approximate) {
      const double k = std::sqrt(2.0 / M_PI);
      return 0.5 * x * (1.0 + tapeflow::tanh(k * (x + 0.044715 * x * x * x)));
    }
    return 0.5 * x * (1.0 + erf(x * M_SQRT1_2));
  });
}

Tensor bias_add(const Tensor& value, const Tensor& bias,
                const std::string& data_format) {
  if (data_format != "NCHW" && data_format != "NHWC")
    throw ValueError(
        "[bias_add] expected data_format \"NCHW\" or \"NHWC\", got \"" +
        data_format + "\"");
  if (value.rank() < 2 || bias.rank() != 1)
    throw ShapeError(
        "[bias_add] expected a value of rank >= 2 and a bias of rank 1, got " +
        value.shape().str() + " and " + bias.shape().str());
  const int64_t axis = data_format == "NHWC" ? value.rank() - 1 : 1;
  if (bias.shape()[0] != value.shape()[axis])
    throw ShapeError("[bias_add] expected a bias of " +
                     std::to_string(value.shape()[axis]) + " channels (axis " +
                     std::to_string(axis) + " of " + value.shape().str() +
                     "), got " + bias.shape().str());
  Shape along = Shape();
  along.resize(value.rank(), 1);
  along[axis] = bias.shape()[0];
  return value + reshape(bias, along);
}

Tensor softmax(const Tensor& logits, int64_t axis) {
  check_floating_logits(logits, "softmax");
  return composite("softmax", [&] {
    const int64_t a = normalize_axis(axis, logits.rank(), "softmax");
    // Shift-invariant: subtracting the (constant) max keeps exp from
    // overflowing.
    const Tensor shifted = logits - stop_gradient(max(logits, {a}, true));
    const Tensor e = exp(shifted);
    return e / sum(e, {a}, true);
  });
}

Tensor log_softmax(const Tensor& logits, int64_t axis) {
  check_floating_logits(logits, "log_softmax");
  return composite("log_softmax", [&] {
    const int64_t a = normalize_axis(axis, logits.rank(), "log_softmax");
    const Tensor shifted = logits - stop_gradient(max(logits, {a}, true));
    return shifted - log(sum(exp(shifted), {a}, true));
  });
}

}  // namespace tapeflow::nn
