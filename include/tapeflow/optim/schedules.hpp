#pragma once
#include <cstdint>
#include <optional>
#include <vector>

// Learning-rate schedules (keras.optimizers.schedules), driven by the
// optimizer's step counter: the rate used by an update is schedule(step),
// step = optimizer.iterations() before that update (0 for the first).
namespace tapeflow::optim {

/** Maps a step count to a learning rate. */
class LearningRateSchedule {
 public:
  virtual ~LearningRateSchedule() = default;
  virtual double operator()(int64_t step) const = 0;
};

/** lr = initial * decay_rate ^ (step / decay_steps); staircase: floor(). */
class ExponentialDecay final : public LearningRateSchedule {
 public:
  ExponentialDecay(double initial_learning_rate, int64_t decay_steps,
                   double decay_rate, bool staircase = false);
  double operator()(int64_t step) const override;

 private:
  double initial_;
  int64_t decay_steps_;
  double decay_rate_;
  bool staircase_;
};

/**
 * values[0] while step <= boundaries[0], values[i] while
 * boundaries[i-1] < step <= boundaries[i], values.back() after the last
 * boundary (values has one more entry than boundaries).
 */
class PiecewiseConstantDecay final : public LearningRateSchedule {
 public:
  PiecewiseConstantDecay(std::vector<int64_t> boundaries,
                         std::vector<double> values);
  double operator()(int64_t step) const override;

 private:
  std::vector<int64_t> boundaries_;
  std::vector<double> values_;
};

/**
 * Keras 3 CosineDecay. Without warm-up: s = min(step, decay_steps);
 * lr = initial * ((1 - alpha) * 0.5 * (1 + cos(pi s / decay_steps)) + alpha).
 * With warmup_target: s = min(step, warmup_steps + decay_steps); while
 * s < warmup_steps lr rises linearly from initial to warmup_target
 * (initial + (target - initial) s / warmup_steps), then decays from
 * warmup_target as above with s - warmup_steps.
 */
class CosineDecay final : public LearningRateSchedule {
 public:
  CosineDecay(double initial_learning_rate, int64_t decay_steps,
              double alpha = 0.0,
              std::optional<double> warmup_target = std::nullopt,
              int64_t warmup_steps = 0);
  double operator()(int64_t step) const override;

 private:
  double decay(double step, double from) const;
  double initial_;
  int64_t decay_steps_;
  double alpha_;
  std::optional<double> warmup_target_;
  int64_t warmup_steps_;
};

}  // namespace tapeflow::optim
