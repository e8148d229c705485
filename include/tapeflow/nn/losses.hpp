#pragma once
#include "tapeflow/core/tensor.hpp"

// Losses, TensorFlow's formulations; stable for extreme logits.
namespace tapeflow::nn {

/** Elementwise (unreduced): max(x, 0) - x z + log(1 + e**-|x|). */
Tensor sigmoid_cross_entropy_with_logits(const Tensor& labels,
                                         const Tensor& logits);
/** Per example: -sum(labels * log_softmax(logits)) along `axis`. */
Tensor softmax_cross_entropy_with_logits(const Tensor& labels,
                                         const Tensor& logits,
                                         int64_t axis = -1);
/**
 * Per example, labels int32/int64 class indices of shape logits[:-1];
 * an index outside [0, classes) is an IndexError.
 */
Tensor sparse_softmax_cross_entropy_with_logits(const Tensor& labels,
                                                const Tensor& logits);
/** sum(t**2) / 2 */ Tensor l2_loss(const Tensor& t);
/** mean((labels - predictions)**2) over the last axis (Keras). */
Tensor mean_squared_error(const Tensor& labels, const Tensor& predictions);
/** Elementwise max(0, 1 - (2 labels - 1) logits), labels in {0, 1}. */
Tensor hinge_loss(const Tensor& labels, const Tensor& logits);

}  // namespace tapeflow::nn
