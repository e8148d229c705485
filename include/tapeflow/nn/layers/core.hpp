#pragma once
#include <optional>

#include "tapeflow/nn/layers/dense.hpp"
#include "tapeflow/nn/module.hpp"

namespace tapeflow::nn {

/**
 * Batch normalization over one channel axis (Keras' BatchNormalization).
 * `axis` 1 is the channels-first layout of the conv layers; -1 is Keras'
 * default, the feature axis of a sequence (N, T, F) or channels-last input.
 */
struct BatchNormOptions {
  double momentum = 0.99;
  double epsilon = 1e-3;
  bool center = true;  // learn beta
  bool scale = true;   // learn gamma
  std::string name = "";
  int64_t axis = 1;
};
class BatchNormalization : public Module {
 public:
  explicit BatchNormalization(BatchNormOptions options = {});
  Tensor forward(const Tensor& x) override;
  /**
   * Training with the mask of padded steps, x's shape without its last axis
   * ((N, T) for (N, T, F)): the batch statistics are those of the unmasked
   * positions only (Keras' masked moments); every position is normalized
   * with them. The running variance takes the unbiased variance over the
   * unmasked count, as without a mask (TF's fused kernel; Keras 3 folds the
   * biased one); a channel with nothing unmasked keeps its statistics, as
   * an empty batch does.
   */
  Tensor forward_masked(const Tensor& x, const Tensor& mask) override;
  /** Keras' supports_masking: the mask of padded steps goes on as it came. */
  Tensor output_mask(const Tensor& /*x*/, const Tensor& mask) const override {
    return mask;
  }

 protected:
  void build(const Shape& input_shape) override;

 private:
  /** options_.axis in [0, rank) for an input of `rank`, checked. */
  int64_t channel_axis(int64_t rank) const;
  Tensor masked_training(const Tensor& x, const Tensor& mask, int64_t axis);

  BatchNormOptions options_;
  Variable gamma_, beta_, moving_mean_, moving_variance_;
};

/** Dropout active in training mode only. */
class Dropout : public Module {
 public:
  explicit Dropout(double rate, std::optional<uint64_t> seed = {},
                   std::string name = "");
  Tensor forward(const Tensor& x) override;
  /** Keras' supports_masking: the mask of padded steps goes on as it came. */
  Tensor output_mask(const Tensor& /*x*/, const Tensor& mask) const override {
    return mask;
  }

 private:
  double rate_;
  std::optional<uint64_t> seed_;
  uint64_t calls_ = 0;
};

/** (N, ...) -> (N, prod(...)). */
class Flatten : public Module {
 public:
  explicit Flatten(std::string name = "")
      : Module("flatten", std::move(name)) {}
  Tensor forward(const Tensor& x) override;
};

/** A function as a layer: ActivationLayer(nn::relu, "relu"). */
class ActivationLayer : public Module {
 public:
  ActivationLayer(Activation fn, std::string name)
      : Module("activation", std::move(name)), fn_(std::move(fn)) {}
  Tensor forward(const Tensor& x) override { return fn_(x); }
  /** Keras' supports_masking: the mask of padded steps goes on as it came. */
  Tensor output_mask(const Tensor& /*x*/, const Tensor& mask) const override {
    return mask;
  }

 private:
  Activation fn_;
};

}  // namespace tapeflow::nn
