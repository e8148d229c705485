#pragma once
#include <optional>

#include "tapeflow/optim/optimizer.hpp"

namespace tapeflow::optim {

/** Options of Momentum (tf.compat.v1.train.MomentumOptimizer). */
struct MomentumOptions {
  LearningRate learning_rate = 0.01;
  double momentum = 0.9;
  bool nesterov = false;
  std::optional<double> weight_decay{}, clipnorm{}, clipvalue{},
      global_clipnorm{};
};

/**
 * TensorFlow's MomentumOptimizer, slot "momentum" (a): a = momentum a + g;
 * w -= lr a, or with nesterov w -= lr g + lr momentum a.
 */
class Momentum final : public Optimizer {
 public:
  explicit Momentum(MomentumOptions options = {});
  explicit Momentum(double learning_rate)
      : Momentum(MomentumOptions{.learning_rate = learning_rate}) {}
  const MomentumOptions& config() const { return options_; }

 protected:
  void update(const Tensor& grad, Variable& param, std::vector<Variable>& slots,
              double lr) override;

 private:
  MomentumOptions options_;
};

}  // namespace tapeflow::optim
