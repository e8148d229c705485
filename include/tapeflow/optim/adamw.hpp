#pragma once
#include <optional>

#include "tapeflow/optim/adam.hpp"

namespace tapeflow::optim {

/** Options of AdamW (keras.optimizers.AdamW). */
struct AdamWOptions {
  LearningRate learning_rate = 0.001;
  double weight_decay = 0.004;
  double beta_1 = 0.9;
  double beta_2 = 0.999;
  double epsilon = 1e-7;
  bool amsgrad = false;
  std::optional<double> clipnorm{}, clipvalue{}, global_clipnorm{};
};

/**
 * Keras AdamW: decoupled weight decay, then Adam's update (same slots):
 * w -= lr weight_decay w; then w -= lr_t m / (sqrt(v') + eps) as in Adam.
 */
class AdamW final : public Adam {
 public:
  explicit AdamW(AdamWOptions options = {});
  explicit AdamW(double learning_rate)
      : AdamW(AdamWOptions{.learning_rate = learning_rate}) {}
};

}  // namespace tapeflow::optim
