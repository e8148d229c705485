#pragma once
#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

#include "tapeflow/autograd.hpp"
#include "tapeflow/core/tensor.hpp"
#include "tapeflow/optim/schedules.hpp"

namespace tapeflow::optim {

/** A constant learning rate or a schedule of the step counter. */
using LearningRate =
    std::variant<double, std::shared_ptr<LearningRateSchedule>>;

/**
 * Options of every optimizer (Keras' base-optimizer arguments). Each is off
 * when empty; at most one of the three clipping options may be set.
 */
struct CommonOptions {
  std::optional<double> weight_decay{};     // w -= lr * weight_decay * w first
  std::optional<double> clipnorm{};         // each gradient: clip_by_norm
  std::optional<double> clipvalue{};        // each gradient: clip to [-v, v]
  std::optional<double> global_clipnorm{};  // all: clip_by_global_norm
};

/**
 * Base of tpf::optim's optimizers (Keras 3 semantics). One step,
 * apply_gradients(grads, params): drop the pairs whose gradient is undefined
 * (nothing happens if none is left); clip the gradients as the options ask;
 * apply the weight decay; update each parameter in place with its slot
 * variables; iterations() += 1. The learning rate of a step is evaluated at
 * iterations() before the increment. Updates are never recorded on a tape.
 * Slots are created by the first apply_gradients that lists a parameter
 * (with a gradient or not), in the list's order, or by build(), and are
 * keyed by the parameter's TensorImpl; the optimizer keeps the parameter
 * alive. Threads may share one optimizer (Hogwild training, as TensorFlow's
 * use_locking=False): its slots and step counter are safe to reach from
 * all of them, and concurrent updates of one parameter may lose each
 * other's step as they would there.
 */
class Optimizer {
 public:
  virtual ~Optimizer();
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  /**
   * One update of `params` by `grads` (same length; undefined gradients are
   * skipped). ValueError on a length mismatch, ShapeError
   * "[apply_gradients] ..." on a gradient of the wrong shape.
   */
  void apply_gradients(const std::vector<Tensor>& grads,
                       const std::vector<Variable>& params);
  /**
   * TensorFlow's apply_gradients(zip(grads, vars)): the same step, given
   * (gradient, parameter) pairs.
   */
  void apply_gradients(
      const std::vector<std::pair<Tensor, Variable>>& grads_and_vars);
  /** Runs loss_fn under a GradientTape; returns (loss, d loss / d params). */
  std::pair<Tensor, std::vector<Tensor>> compute_gradients(
      const std::function<Tensor()>& loss_fn,
      const std::vector<Variable>& params);
  /** compute_gradients + apply_gradients; returns the loss. */
  Tensor minimize(const std::function<Tensor()>& loss_fn,
                  const std::vector<Variable>& params);
  /** Creates the slots of `params` now (to restore them before a step). */
  void build(const std::vector<Variable>& params);

  /** Number of steps applied so far. */
  int64_t iterations() const { return iterations_.load(); }
  void set_iterations(int64_t iterations);
  /** The learning rate the next step uses. */
  double learning_rate() const;
  void set_learning_rate(LearningRate learning_rate);

  /** Names of a parameter's slots, in order (e.g. {"m", "v"} for Adam). */
  const std::vector<std::string>& slot_names() const { return slot_names_; }
  /**
   * Every slot as ("param<i>/<slot name>", variable); i numbers the
   * parameters in the order they were first seen, so names are stable.
   */
  std::vector<std::pair<std::string, Variable>> slots() const;
  /** One slot of `param`; ValueError if it has none of that name. */
  Variable slot(const Variable& param, const std::string& name) const;
  /** Parameters with slots, in index order. */
  std::vector<Variable> variables() const;

  const std::string& name() const { return name_; }
  const CommonOptions& options() const { return common_; }

 protected:
  Optimizer(std::string name, LearningRate learning_rate, CommonOptions common,
            std::vector<std::string> slot_names);
  /** Initial values of a new parameter's slots; default: zeros. */
  virtual std::vector<Tensor> initial_slots(const Variable& param) const;
  /**
   * Updates one parameter in place with `grad` (the parameter's dtype and
   * shape). `slots` follow slot_names(); `lr` is this step's learning rate;
   * iterations() is the number of earlier steps. Runs under NoGradGuard.
   */
  virtual void update(const Tensor& grad, Variable& param,
                      std::vector<Variable>& slots, double lr) = 0;

 private:
  struct ParamState {
    Variable param;
    std::vector<Variable> slots;
  };
  ParamState& state_for(const Variable& param);

  std::string name_;
  LearningRate learning_rate_;
  CommonOptions common_;
  std::vector<std::string> slot_names_;
  std::atomic<int64_t> iterations_ = 0;
  // Guards index_ and states_; a deque, so that a thread updating through
  // its ParamState keeps it while another thread's first step adds one.
  mutable std::mutex states_lock_;
  std::unordered_map<const TensorImpl*, size_t> index_;
  std::deque<ParamState> states_;
};

}  // namespace tapeflow::optim
