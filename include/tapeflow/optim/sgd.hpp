#pragma once
#include <optional>

#include "tapeflow/optim/optimizer.hpp"

namespace tapeflow::optim {

/** Options of SGD (keras.optimizers.SGD). */
struct SGDOptions {
  LearningRate learning_rate = 0.01;
  double momentum = 0.0;  // in [0, 1]
  bool nesterov = false;
  std::optional<double> weight_decay{}, clipnorm{}, clipvalue{},
      global_clipnorm{};
};

/**
 * Keras SGD. momentum 0: w -= lr g. Otherwise, slot "momentum" (m):
 * m = momentum m - lr g; w += m, or with nesterov w += momentum m - lr g.
 */
class SGD final : public Optimizer {
 public:
  explicit SGD(SGDOptions options = {});
  explicit SGD(double learning_rate)
      : SGD(SGDOptions{.learning_rate = learning_rate}) {}
  const SGDOptions& config() const { return options_; }

 protected:
  void update(const Tensor& grad, Variable& param, std::vector<Variable>& slots,
              double lr) override;

 private:
  SGDOptions options_;
};

}  // namespace tapeflow::optim
