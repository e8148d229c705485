#pragma once
// The fused loss op behind sparse_softmax_cross_entropy_with_logits.
#include <array>

#include "core/op_error.hpp"
#include "ops/op.hpp"

namespace tapeflow {

/**
 * Inputs (logits (rows, classes), labels (rows,) int32 or int64); outputs
 * (loss (rows,), backprop (rows, classes)): per row the cross entropy
 * log(sum(exp(logits))) - logits[label] and its gradient softmax(logits) -
 * one_hot(label), reading the logits from memory once, as TensorFlow's
 * SparseSoftmaxCrossEntropyWithLogits. A label outside [0, classes) gives a
 * NaN loss and the softmax as backprop (the public function refuses such
 * labels first). The gradient is backprop times the loss's gradient; through
 * backprop (a second order) it is the Jacobian of the softmax, recomputed
 * from the logits (backprop + one_hot would round a small probability at the
 * label away), so that gradients of gradients hold.
 */
struct SparseSoftmaxCrossEntropy {
  static constexpr const char* name = "sparse_softmax_cross_entropy";
  static constexpr int save = kSaveInputs | kSaveOutput;
  static constexpr uint32_t saved_outputs = 0b10;  // backprop, not the loss
  std::array<TensorSpec, 2> infer(Inputs in) const {
    // The kernels read labels as int32 or int64, one a row: what reaches the
    // op through apply() gets the public function's checks.
    if (in.size() != 2)
      throw op_error<ValueError>(name, "expected 2 operands, got ", in.size());
    const Shape& logits = in[0].shape();
    if (!is_floating(in[0].dtype()) || !is_integral(in[1].dtype()))
      throw op_error<DTypeError>(
          name,
          "expected float32 or float64 logits and int32 or int64 labels, "
          "got ",
          dtype_name(in[0].dtype()), " and ", dtype_name(in[1].dtype()));
    if (in[0].rank() != 2 || !(in[1].shape() == Shape{logits[0]}))
      throw op_error<ShapeError>(
          name, "expected logits (rows, classes) and labels (rows,), got ",
          logits.str(), " and ", in[1].shape().str());
    return {TensorSpec{Shape{logits[0]}, in[0].dtype()},
            TensorSpec{logits, in[0].dtype()}};
  }
  Grads vjp(const VjpArgs& a) const;
};

}  // namespace tapeflow
