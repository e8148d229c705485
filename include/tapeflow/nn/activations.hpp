#pragma once
#include <cstdint>
#include <string>

#include "tapeflow/core/tensor.hpp"

// Activations as composites of the math ops: each is differentiable (and
// twice differentiable) through the rules of the ops it is built from.
namespace tapeflow::nn {

/** max(x, 0); NaN stays NaN, as in PyTorch. */ Tensor relu(const Tensor& x);
/** min(max(x, 0), 6); NaN stays NaN. */ Tensor relu6(const Tensor& x);
/** concat([relu(x), relu(-x)], axis): doubles the channels. */
Tensor crelu(const Tensor& x, int64_t axis = -1);
/** x for x > 0, alpha (e**x - 1) otherwise. */
Tensor elu(const Tensor& x, double alpha = 1.0);
/** Self-normalizing ELU (Klambauer et al.): scale * elu(x, alpha). */
Tensor selu(const Tensor& x);
/** log(1 + e**x), without overflow for large |x|. */
Tensor softplus(const Tensor& x);
/** x / (1 + |x|) */ Tensor softsign(const Tensor& x);
Tensor sigmoid(const Tensor& x);
Tensor tanh(const Tensor& x);
/** x for x > 0, alpha x otherwise. */
Tensor leaky_relu(const Tensor& x, double alpha = 0.2);
/** x Phi(x); the tanh approximation when `approximate`. */
Tensor gelu(const Tensor& x, bool approximate = false);
/**
 * value + bias, with bias (C,) along the channel axis: axis 1 for "NCHW"
 * (and for any rank-2 value), the last axis for "NHWC".
 */
Tensor bias_add(const Tensor& value, const Tensor& bias,
                const std::string& data_format = "NCHW");
/** exp(x) / sum(exp(x)) along `axis`; no overflow at any logit. */
Tensor softmax(const Tensor& logits, int64_t axis = -1);
/** log(softmax(x)) computed as x - max - log(sum(exp(x - max))). */
Tensor log_softmax(const Tensor& logits, int64_t axis = -1);

}  // namespace tapeflow::nn
