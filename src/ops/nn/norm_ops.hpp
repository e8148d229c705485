#pragma once
// Fused batch normalization over x seen as (N, C, S): every axis but 1.
#include "ops/elementwise_ops.hpp"

namespace tapeflow {

/**
 * Inputs (x, scale, offset, mean, variance), all but x of shape (C,).
 * Normalizes with the given statistics. When `training`, they are the batch
 * moments of x (computed by the public function), and the vjp differentiates
 * through them; the mean and variance inputs themselves get no gradient.
 */
struct FusedBatchNorm {
  static constexpr const char* name = "fused_batch_norm";
  static constexpr int save = kSaveInputs;
  double epsilon;
  bool training;
  TensorSpec infer(Inputs in) const { return {in[0].shape(), in[0].dtype()}; }
  Grads vjp(const VjpArgs& a) const;
};
/**
 * Per-channel mean and biased variance of x (N, C, ...) over every axis but
 * 1, packed as (2, C): row 0 the mean, row 1 the variance (ops have one
 * output). One pass over x in the kernel.
 */
struct BatchMoments {
  static constexpr const char* name = "batch_moments";
  static constexpr int save = kSaveInputs | kSaveOutput;
  TensorSpec infer(Inputs in) const {
    return {Shape{2, in[0].shape()[1]}, in[0].dtype()};
  }
  Grads vjp(const VjpArgs& a) const;
};
/**
 * Inputs (x, dy, scale, mean, variance). Ops have one output, so the three
 * gradients come packed in one flat tensor: dx (x.numel(), x's row-major
 * order), then dscale (C), then doffset (C), the layout of oneDNN's
 * diff_scale_shift. Not differentiable again (no vjp).
 */
struct BatchNormGrad {
  static constexpr const char* name = "batch_norm_grad";
  static constexpr int save = kSaveNothing;
  double epsilon;
  bool training;
  TensorSpec infer(Inputs in) const {
    return {Shape{in[0].numel() + 2 * in[0].shape()[1]}, in[0].dtype()};
  }
  /** Not differentiable again: says so instead of a silent zero. */
  Grads vjp(const VjpArgs& a) const;
};

}  // namespace tapeflow
