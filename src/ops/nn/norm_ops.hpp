#pragma once
// Fused batch normalization over x seen as (N, C, S): every axis but 1.
#include <array>

#include "ops/op.hpp"

namespace tapeflow {

/** Specs of a tensor like x followed by two (C,) per-channel tensors. */
inline std::array<TensorSpec, 3> like_x_and_two_channels(const Tensor& x) {
  const Shape c{x.shape()[1]};
  return {TensorSpec{x.shape(), x.dtype()}, TensorSpec{c, x.dtype()},
          TensorSpec{c, x.dtype()}};
}

/**
 * Outputs (y, batch mean, batch variance), all but y of shape (C,).
 * Training: inputs (x, scale, offset); the kernel computes the batch moments
 * of x in one pass, normalizes with them and returns them, and the vjp
 * differentiates through them. Inference: inputs (x, scale, offset, mean,
 * variance); y is normalized with the given statistics, which come back as
 * outputs 1 and 2 (as TensorFlow's FusedBatchNorm returns them) and get no
 * gradient through y.
 */
struct FusedBatchNorm {
  static constexpr const char* name = "fused_batch_norm";
  static constexpr int save = kSaveInputs | kSaveOutput;
  static constexpr uint32_t saved_outputs = 0b110;  // the statistics, not y
  double epsilon;
  bool training;
  std::array<TensorSpec, 3> infer(Inputs in) const {
    return like_x_and_two_channels(in[0]);
  }
  Grads vjp(const VjpArgs& a) const;
};
/**
 * Per-channel mean and biased variance of x (N, C, ...) over every axis but
 * 1: two (C,) outputs from one pass over x.
 */
struct BatchMoments {
  static constexpr const char* name = "batch_moments";
  static constexpr int save = kSaveInputs | kSaveOutput;
  std::array<TensorSpec, 2> infer(Inputs in) const {
    const TensorSpec c{Shape{in[0].shape()[1]}, in[0].dtype()};
    return {c, c};
  }
  Grads vjp(const VjpArgs& a) const;
};
/**
 * Inputs (x, dy, scale, mean, variance); outputs (dx, dscale, doffset) in
 * one pass. Not differentiable again (no vjp).
 */
struct BatchNormGrad {
  static constexpr const char* name = "batch_norm_grad";
  static constexpr int save = kSaveNothing;
  double epsilon;
  bool training;
  std::array<TensorSpec, 3> infer(Inputs in) const {
    return like_x_and_two_channels(in[0]);
  }
  /** Not differentiable again: says so instead of a silent zero. */
  Grads vjp(const VjpArgs& a) const;
};

}  // namespace tapeflow
