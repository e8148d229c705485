#pragma once
#include <optional>

#include "tapeflow/optim/optimizer.hpp"

namespace tapeflow::optim {

/** Options of Adam (keras.optimizers.Adam). */
struct AdamOptions {
  LearningRate learning_rate = 0.001;
  double beta_1 = 0.9;
  double beta_2 = 0.999;
  double epsilon = 1e-7;
  bool amsgrad = false;
  std::optional<double> weight_decay{}, clipnorm{}, clipvalue{},
      global_clipnorm{};
};

/**
 * Keras Adam (epsilon-hat form), slots "m", "v" and "vhat" (amsgrad), t =
 * iterations() + 1: m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2; amsgrad:
 * vhat = max(vhat, v), v' = vhat, else v' = v;
 * lr_t = lr sqrt(1-b2^t)/(1-b1^t); w -= lr_t m / (sqrt(v') + eps).
 */
class Adam : public Optimizer {
 public:
  explicit Adam(AdamOptions options = {});
  explicit Adam(double learning_rate)
      : Adam(AdamOptions{.learning_rate = learning_rate}) {}
  const AdamOptions& config() const { return options_; }

 protected:
  Adam(std::string name, AdamOptions options, CommonOptions common);
  void update(const Tensor& grad, Variable& param, std::vector<Variable>& slots,
              double lr) override;

 private:
  AdamOptions options_;
};

}  // namespace tapeflow::optim
