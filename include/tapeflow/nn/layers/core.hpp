#pragma once
#include <optional>

#include "tapeflow/nn/layers/dense.hpp"
#include "tapeflow/nn/module.hpp"

namespace tapeflow::nn {

/** Batch normalization over the channel axis 1 (Keras' BatchNormalization). */
struct BatchNormOptions {
  double momentum = 0.99;
  double epsilon = 1e-3;
  bool center = true;  // learn beta
  bool scale = true;   // learn gamma
  std::string name = "";
};
class BatchNormalization : public Module {
 public:
  explicit BatchNormalization(BatchNormOptions options = {});
  Tensor forward(const Tensor& x) override;
  /** Keras' supports_masking: the mask of padded steps goes on as it came. */
  Tensor output_mask(const Tensor& /*x*/, const Tensor& mask) const override {
    return mask;
  }

 protected:
  void build(const Shape& input_shape) override;

 private:
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
