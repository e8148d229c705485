#pragma once
#include <optional>

#include "tapeflow/optim/optimizer.hpp"

namespace tapeflow::optim {

/** Options of Adagrad (keras.optimizers.Adagrad). */
struct AdagradOptions {
  LearningRate learning_rate = 0.001;
  double initial_accumulator_value = 0.1;
  double epsilon = 1e-7;
  std::optional<double> weight_decay{}, clipnorm{}, clipvalue{},
      global_clipnorm{};
};

/** Keras Adagrad, slot "accumulator" (a, starts at initial_accumulator_value):
 * a += g^2; w -= lr g / sqrt(a + eps). */
class Adagrad final : public Optimizer {
 public:
  explicit Adagrad(AdagradOptions options = {});
  explicit Adagrad(double learning_rate)
      : Adagrad(AdagradOptions{.learning_rate = learning_rate}) {}
  const AdagradOptions& config() const { return options_; }

 protected:
  std::vector<Tensor> initial_slots(const Variable& param) const override;
  void update(const Tensor& grad, Variable& param, std::vector<Variable>& slots,
              double lr) override;

 private:
  AdagradOptions options_;
};

}  // namespace tapeflow::optim
