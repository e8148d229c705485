#pragma once
#include <optional>

#include "tapeflow/optim/optimizer.hpp"

namespace tapeflow::optim {

/** Options of RMSProp (keras.optimizers.RMSprop). */
struct RMSPropOptions {
  LearningRate learning_rate = 0.001;
  double rho = 0.9;
  double momentum = 0.0;
  double epsilon = 1e-7;
  bool centered = false;
  std::optional<double> weight_decay{}, clipnorm{}, clipvalue{},
      global_clipnorm{};
};

/**
 * Keras RMSprop, slots "velocity" (v), "momentum" (m, when momentum > 0),
 * "average_gradient" (a, when centered): v = rho v + (1-rho) g^2;
 * centered: a = rho a + (1-rho) g, den = v - a^2 + eps, else den = v + eps;
 * inc = lr g / sqrt(den); momentum: m = momentum m + inc, w -= m; else
 * w -= inc.
 */
class RMSProp final : public Optimizer {
 public:
  explicit RMSProp(RMSPropOptions options = {});
  explicit RMSProp(double learning_rate)
      : RMSProp(RMSPropOptions{.learning_rate = learning_rate}) {}
  const RMSPropOptions& config() const { return options_; }

 protected:
  void update(const Tensor& grad, Variable& param, std::vector<Variable>& slots,
              double lr) override;

 private:
  RMSPropOptions options_;
};

/** The Keras spelling. */
using RMSprop = RMSProp;

}  // namespace tapeflow::optim
