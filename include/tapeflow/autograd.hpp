#pragma once
#include <concepts>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "tapeflow/core/tensor.hpp"

namespace tapeflow {

/** What gradient() returns for a source the target does not depend on. */
enum class UnconnectedGradients { none, zero };

namespace autograd {
class TapeState;
}
class Variable;

/**
 * What gradient() takes beyond the target and sources. The hooks let a caller
 * act on each gradient as soon as it is final, while the reverse walk goes on
 * (distributed data parallel starts reducing a bucket there).
 */
struct GradientOptions {
  /** Seeds the target's gradient (default ones); at most one. */
  std::vector<Tensor> output_gradients;
  UnconnectedGradients unconnected = UnconnectedGradients::none;
  /**
   * Called once per source, with its index in `sources` and its gradient (as
   * gradient() returns it), as soon as that gradient is final: when the walk
   * has passed the source's first forward use. Sources the tape never used
   * come first, before the walk.
   */
  std::function<void(size_t source, const Tensor& grad)> on_ready;
  /** Called after each recorded op's backward (and after each on_ready). */
  std::function<void()> after_entry;
};

/**
 * Records the ops run while it is alive, for reverse-mode differentiation.
 * Tensors are tracked once watched (Variables are watched on first use); an
 * op is recorded when one of its inputs is tracked. Nested tapes give
 * higher-order gradients: an outer tape records the inner tape's backward.
 */
class GradientTape {
 public:
  explicit GradientTape(bool persistent = false);
  ~GradientTape();
  GradientTape(const GradientTape&) = delete;
  GradientTape& operator=(const GradientTape&) = delete;

  /** Tracks `t` so that gradients with respect to it can be asked for. */
  void watch(const Tensor& t);
  /**
   * d target / d source for each source. `output_gradients` seeds the
   * target's gradient (default ones). A non-persistent tape answers once and
   * then frees everything it saved.
   */
  std::vector<Tensor> gradient(
      const Tensor& target, const std::vector<Tensor>& sources,
      const std::vector<Tensor>& output_gradients = {},
      UnconnectedGradients unconnected = UnconnectedGradients::none);
  std::vector<Tensor> gradient(const Tensor& target,
                               const std::vector<Tensor>& sources,
                               const GradientOptions& options);
  /**
   * gradient() w.r.t. Variables as they come: `model.parameters()`. A
   * template, so that a braced list `{w, b}` still means the overloads above.
   */
  template <class Sources>
  requires std::same_as<Sources, std::vector<Variable>> std::vector<Tensor>
  gradient(const Tensor& target, const Sources& sources,
           const GradientOptions& options = {}) {
    return gradient(target, std::vector<Tensor>(sources.begin(), sources.end()),
                    options);
  }
  /**
   * Drops every recorded op; the tape keeps recording. A ValueError from
   * inside this tape's gradient() (a hook), whose walk reads those ops.
   */
  void reset();
  /** Number of ops recorded so far. */
  size_t size() const;
  bool persistent() const;

 private:
  // Shared with this thread's list of recording tapes, so that destroying
  // the tape on another thread leaves the owner a valid entry to drop.
  std::shared_ptr<autograd::TapeState> state_;
};

/** A trainable tensor: watched by tapes automatically; updated in place. */
class Variable : public Tensor {
 public:
  Variable() = default;
  explicit Variable(const Tensor& initial_value, bool trainable = true);
  /** Overwrites the value in place (shape and dtype must match). */
  void assign(const Tensor& value);
  /**
   * value += delta / value -= delta in place: delta of the variable's shape
   * and dtype (nothing broadcast, as TF's assign_add), numeric variables.
   */
  void assign_add(const Tensor& delta);
  void assign_sub(const Tensor& delta);
};

/** The same values, but gradients do not flow through. */
Tensor stop_gradient(const Tensor& x);

/** While alive, no op is recorded on any tape (this thread). */
class NoGradGuard {
 public:
  NoGradGuard();
  ~NoGradGuard();
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;
};

/** Maps the gradients of a custom op's outputs to those of its inputs. */
using GradFunction =
    std::function<std::vector<Tensor>(const std::vector<Tensor>& output_grads)>;
/** What the forward function of custom_gradient returns. */
struct CustomResult {
  std::vector<Tensor> outputs;
  GradFunction grad;
};
/**
 * Runs `forward(inputs)` without recording it, then records one op whose
 * gradient is `forward`'s returned GradFunction (tf.custom_gradient).
 */
std::vector<Tensor> custom_gradient(
    const std::function<CustomResult(const std::vector<Tensor>&)>& forward,
    const std::vector<Tensor>& inputs);

}  // namespace tapeflow
