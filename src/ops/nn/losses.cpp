// Losses: composites of the math ops, in TensorFlow's stable formulations.
#include "tapeflow/nn/losses.hpp"

#include "core/op_error.hpp"
#include "ops/apply.hpp"
#include "ops/axes.hpp"
#include "ops/composite.hpp"
#include "ops/nn/loss_ops.hpp"
#include "tapeflow/nn/activations.hpp"
#include "tapeflow/ops/math.hpp"
#include "tapeflow/ops/reduce.hpp"
#include "tapeflow/ops/shape.hpp"

namespace tapeflow::nn {
namespace {

void check_same_shape(const Tensor& labels, const Tensor& logits,
                      const char* op) {
  if (!(labels.shape() == logits.shape()))
    throw op_error<ShapeError>(op, "expected labels of shape ",
                               logits.shape().str(), " (the logits'), got ",
                               labels.shape().str());
}

}  // namespace

Tensor sigmoid_cross_entropy_with_logits(const Tensor& labels,
                                         const Tensor& logits) {
  return composite("sigmoid_cross_entropy_with_logits", [&] {
    check_same_shape(labels, logits, "sigmoid_cross_entropy_with_logits");
    // softplus(x) - x z: TF's stable form, with the slope at 0 of 0.5 - z.
    const Tensor z = labels.cast(logits.dtype());
    return softplus(logits) - logits * z;
  });
}

Tensor softmax_cross_entropy_with_logits(const Tensor& labels,
                                         const Tensor& logits, int64_t axis) {
  return composite("softmax_cross_entropy_with_logits", [&] {
    check_same_shape(labels, logits, "softmax_cross_entropy_with_logits");
    const int64_t a = normalize_axis(axis, logits.rank(),
                                     "softmax_cross_entropy_with_logits");
    return -sum(labels.cast(logits.dtype()) * log_softmax(logits, a), {a});
  });
}

Tensor sparse_softmax_cross_entropy_with_logits(const Tensor& labels,
                                                const Tensor& logits) {
  constexpr const char* op = "sparse_softmax_cross_entropy_with_logits";
  return composite(op, [&] {
    if (!is_integral(labels.dtype()))
      throw op_error<DTypeError>(op, "expected int32 or int64 labels, got ",
                                 dtype_name(labels.dtype()));
    if (logits.rank() < 1)
      throw op_error<ShapeError>(
          op, "expected logits of rank >= 1 (..., classes), got shape ",
          logits.shape().str());
    if (!is_floating(logits.dtype()))
      throw op_error<DTypeError>(op, "expected float32 or float64 logits, got ",
                                 dtype_name(logits.dtype()));
    if (labels.rank() != logits.rank() - 1)
      throw op_error<ShapeError>(
          op, "expected labels of rank ", logits.rank() - 1, " for logits ",
          logits.shape().str(), ", got ", labels.shape().str());
    for (int64_t i = 0; i < labels.rank(); ++i)
      if (labels.shape()[i] != logits.shape()[i])
        throw op_error<ShapeError>(
            op, "expected labels of shape ", labels.shape().str(),
            " to match logits ", logits.shape().str(), " on the leading axes");
    const int64_t classes = logits.shape()[logits.rank() - 1];
    if (labels.numel() > 0) {
      const int64_t lo = min(labels).item<int64_t>(),
                    hi = max(labels).item<int64_t>();
      if (lo < 0 || hi >= classes)
        throw op_error<IndexError>(op, "expected labels in [0, ", classes,
                                   "), got ", lo < 0 ? lo : hi);
    }
    const int64_t rows = labels.numel();
    auto [loss, backprop] =
        apply(SparseSoftmaxCrossEntropy{},
              {reshape(logits, {rows, classes}), reshape(labels, {rows})});
    return reshape(loss, labels.shape());
  });
}

Tensor l2_loss(const Tensor& t) {
  return composite("l2_loss", [&] { return sum(square(t)) * 0.5; });
}

Tensor mean_squared_error(const Tensor& labels, const Tensor& predictions) {
  return composite("mean_squared_error", [&] {
    check_same_shape(labels, predictions, "mean_squared_error");
    return mean(square(labels.cast(predictions.dtype()) - predictions), {-1});
  });
}

Tensor hinge_loss(const Tensor& labels, const Tensor& logits) {
  return composite("hinge_loss", [&] {
    check_same_shape(labels, logits, "hinge_loss");
    const Tensor sign = 2.0 * labels.cast(logits.dtype()) - 1.0;
    return tapeflow::relu(1.0 - sign * logits);
  });
}

}  // namespace tapeflow::nn

namespace tapeflow {

Grads SparseSoftmaxCrossEntropy::vjp(const VjpArgs& a) const {
  const Tensor& backprop = a.output(1);
  Tensor g;
  if (a.grads[0].defined()) g = backprop * expand_dims(a.grads[0], -1);
  if (a.grads[1].defined()) {
    // backprop is the softmax p less a constant: p's Jacobian applies.
    const Tensor p = nn::softmax(a.x(0), -1);
    const Tensor through = p * (a.grads[1] - sum(a.grads[1] * p, {-1}, true));
    g = g.defined() ? g + through : through;
  }
  return {g, Tensor()};
}

}  // namespace tapeflow
