#pragma once
#include <functional>

#include "tapeflow/nn/initializers.hpp"
#include "tapeflow/nn/module.hpp"

namespace tapeflow::nn {

using Activation = std::function<Tensor(const Tensor&)>;

struct DenseOptions {
  Activation activation = {};  // none: linear
  bool use_bias = true;
  Initializer kernel_initializer = glorot_uniform();
  Initializer bias_initializer = zeros_initializer();
  int64_t input_dim = 0;  // > 0 builds the weights at construction
  std::string name = "";
};

/** activation(x W + b): x (..., in), kernel (in, units), bias (units,). */
class Dense : public Module {
 public:
  explicit Dense(int64_t units, DenseOptions options = {});
  Tensor forward(const Tensor& x) override;
  /** Keras' supports_masking: the mask of padded steps goes on as it came. */
  Tensor output_mask(const Tensor& /*x*/, const Tensor& mask) const override {
    return mask;
  }
  const Variable& kernel() const { return kernel_; }
  const Variable& bias() const { return bias_; }

 protected:
  void build(const Shape& input_shape) override;

 private:
  int64_t units_;
  DenseOptions options_;
  Variable kernel_, bias_;
};

}  // namespace tapeflow::nn
