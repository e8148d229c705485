#pragma once
// The fused loss op behind sparse_softmax_cross_entropy_with_logits.
#include <array>

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
    const Shape& logits = in[0].shape();
    return {TensorSpec{Shape{logits[0]}, in[0].dtype()},
            TensorSpec{logits, in[0].dtype()}};
  }
  Grads vjp(const VjpArgs& a) const;
};

}  // namespace tapeflow
