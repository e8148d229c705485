#pragma once
#include <optional>

#include "tapeflow/optim/optimizer.hpp"

namespace tapeflow::optim {

/** Options of Adadelta (keras.optimizers.Adadelta). */
struct AdadeltaOptions {
  LearningRate learning_rate = 0.001;
  double rho = 0.95;
  double epsilon = 1e-7;
  std::optional<double> weight_decay{}, clipnorm{}, clipvalue{},
      global_clipnorm{};
};

/**
 * Keras Adadelta, slots "accumulated_grad" (a) and "accumulated_delta_var"
 * (d): a = rho a + (1-rho) g^2; u = -sqrt(d + eps) g / sqrt(a + eps);
 * d = rho d + (1-rho) u^2; w += lr u.
 */
class Adadelta final : public Optimizer {
 public:
  explicit Adadelta(AdadeltaOptions options = {});
  explicit Adadelta(double learning_rate)
      : Adadelta(AdadeltaOptions{.learning_rate = learning_rate}) {}
  const AdadeltaOptions& config() const { return options_; }

 protected:
  void update(const Tensor& grad, Variable& param, std::vector<Variable>& slots,
              double lr) override;

 private:
  AdadeltaOptions options_;
};

}  // namespace tapeflow::optim
