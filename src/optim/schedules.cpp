#include "tapeflow/optim/schedules.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <string>

#include "core/op_error.hpp"
#include "tapeflow/core/error.hpp"

namespace tapeflow::optim {

namespace {

void check_steps(const char* who, const char* what, int64_t steps,
                 int64_t min) {
  if (steps < min)
    throw op_error<ValueError>(who, "expected ", what, " >= ", min, ", got ",
                               steps);
}

/** Rates and factors come from the user: NaN, infinite or negative ones
 * would reach the optimizer only at the step that uses them. */
void check_rate(const char* who, const char* what, double v) {
  if (!(std::isfinite(v) && v >= 0))
    throw op_error<ValueError>(who, "expected a finite ", what, " >= 0, got ",
                               v);
}

}  // namespace

ExponentialDecay::ExponentialDecay(double initial_learning_rate,
                                   int64_t decay_steps, double decay_rate,
                                   bool staircase)
    : initial_(initial_learning_rate),
      decay_steps_(decay_steps),
      decay_rate_(decay_rate),
      staircase_(staircase) {
  check_steps("ExponentialDecay", "decay_steps", decay_steps, 1);
  check_rate("ExponentialDecay", "initial_learning_rate",
             initial_learning_rate);
  check_rate("ExponentialDecay", "decay_rate", decay_rate);
}

double ExponentialDecay::operator()(int64_t step) const {
  double p = static_cast<double>(step) / static_cast<double>(decay_steps_);
  if (staircase_) p = std::floor(p);
  return initial_ * std::pow(decay_rate_, p);
}

PiecewiseConstantDecay::PiecewiseConstantDecay(std::vector<int64_t> boundaries,
                                               std::vector<double> values)
    : boundaries_(std::move(boundaries)), values_(std::move(values)) {
  if (values_.size() != boundaries_.size() + 1)
    throw ValueError(
        "[PiecewiseConstantDecay] expected one more value than boundaries, "
        "got " +
        std::to_string(boundaries_.size()) + " boundaries and " +
        std::to_string(values_.size()) + " values");
  for (size_t i = 1; i < boundaries_.size(); ++i)
    if (!(boundaries_[i - 1] < boundaries_[i]))
      throw ValueError(
          "[PiecewiseConstantDecay] expected increasing boundaries, got " +
          std::to_string(boundaries_[i - 1]) + " then " +
          std::to_string(boundaries_[i]));
  for (double v : values_) check_rate("PiecewiseConstantDecay", "value", v);
}

double PiecewiseConstantDecay::operator()(int64_t step) const {
  // The first boundary b with step <= b picks its value; past all: the last.
  const auto it =
      std::lower_bound(boundaries_.begin(), boundaries_.end(), step);
  return values_[static_cast<size_t>(it - boundaries_.begin())];
}

CosineDecay::CosineDecay(double initial_learning_rate, int64_t decay_steps,
                         double alpha, std::optional<double> warmup_target,
                         int64_t warmup_steps)
    : initial_(initial_learning_rate),
      decay_steps_(decay_steps),
      alpha_(alpha),
      warmup_target_(warmup_target),
      warmup_steps_(warmup_steps) {
  check_steps("CosineDecay", "decay_steps", decay_steps, 1);
  check_steps("CosineDecay", "warmup_steps", warmup_steps, 0);
  check_rate("CosineDecay", "initial_learning_rate", initial_learning_rate);
  check_rate("CosineDecay", "alpha", alpha);
  if (warmup_target) check_rate("CosineDecay", "warmup_target", *warmup_target);
}

double CosineDecay::decay(double step, double from) const {
  const double fraction = step / static_cast<double>(decay_steps_);
  const double cosine = 0.5 * (1.0 + std::cos(std::numbers::pi * fraction));
  return from * ((1.0 - alpha_) * cosine + alpha_);
}

double CosineDecay::operator()(int64_t step) const {
  if (!warmup_target_)
    return decay(static_cast<double>(std::min(step, decay_steps_)), initial_);
  // In double: decay_steps + warmup_steps may pass INT64_MAX.
  const double s = std::min(
      static_cast<double>(step),
      static_cast<double>(decay_steps_) + static_cast<double>(warmup_steps_));
  const double warm = static_cast<double>(warmup_steps_);
  if (s < warm) return (*warmup_target_ - initial_) * (s / warm) + initial_;
  return decay(s - warm, *warmup_target_);
}

}  // namespace tapeflow::optim
