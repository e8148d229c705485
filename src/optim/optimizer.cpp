#include "tapeflow/optim/optimizer.hpp"

#include <cmath>

#include "core/op_error.hpp"
#include "tapeflow/creation.hpp"
#include "tapeflow/ops/math.hpp"
#include "tapeflow/optim/clipping.hpp"

namespace tapeflow::optim {

namespace {

void check_positive(const std::string& who, const char* what,
                    const std::optional<double>& v) {
  if (v && !(*v > 0.0))
    throw op_error<ValueError>(who, "expected ", what, " > 0 when set, got ",
                               *v);
}

}  // namespace

Optimizer::Optimizer(std::string name, LearningRate learning_rate,
                     CommonOptions common, std::vector<std::string> slot_names)
    : name_(std::move(name)),
      common_(common),
      slot_names_(std::move(slot_names)) {
  set_learning_rate(std::move(learning_rate));
  const int clips = common_.clipnorm.has_value() +
                    common_.clipvalue.has_value() +
                    common_.global_clipnorm.has_value();
  if (clips > 1)
    throw op_error<ValueError>(
        name_,
        "expected at most one of clipnorm, clipvalue and "
        "global_clipnorm, got ",
        std::to_string(clips));
  check_positive(name_, "clipnorm", common_.clipnorm);
  check_positive(name_, "clipvalue", common_.clipvalue);
  check_positive(name_, "global_clipnorm", common_.global_clipnorm);
  if (common_.weight_decay && !(*common_.weight_decay >= 0.0))
    throw op_error<ValueError>(name_, "expected weight_decay >= 0, got ",
                               *common_.weight_decay);
}

Optimizer::~Optimizer() = default;

void Optimizer::set_learning_rate(LearningRate learning_rate) {
  if (const auto* s =
          std::get_if<std::shared_ptr<LearningRateSchedule>>(&learning_rate))
    if (!*s)
      throw op_error<ValueError>(name_,
                                 "expected a learning-rate schedule, got null");
  if (const double* v = std::get_if<double>(&learning_rate))
    if (!(std::isfinite(*v) && *v >= 0))
      throw op_error<ValueError>(
          name_, "expected a finite learning_rate >= 0, got ", *v);
  learning_rate_ = std::move(learning_rate);
}

double Optimizer::learning_rate() const {
  if (const double* v = std::get_if<double>(&learning_rate_)) return *v;
  // A user's schedule can return anything: a NaN or negative rate would
  // turn every parameter to NaN or climb the loss, silently.
  const int64_t step = iterations_.load();
  const double rate =
      (*std::get<std::shared_ptr<LearningRateSchedule>>(learning_rate_))(step);
  if (!(std::isfinite(rate) && rate >= 0))
    throw op_error<ValueError>(
        name_,
        "expected a finite learning_rate >= 0 from its schedule at step ", step,
        ", got ", rate);
  return rate;
}

void Optimizer::set_iterations(int64_t iterations) {
  if (iterations < 0)
    throw ValueError("[set_iterations] expected a count >= 0, got " +
                     std::to_string(iterations));
  iterations_ = iterations;
}

std::vector<Tensor> Optimizer::initial_slots(const Variable& param) const {
  return std::vector<Tensor>(slot_names_.size(), zeros_like(param));
}

Optimizer::ParamState& Optimizer::state_for(const Variable& param) {
  const std::lock_guard lock(states_lock_);
  const auto it = index_.find(param.impl());
  if (it != index_.end()) return states_[it->second];
  ParamState s{param, {}};
  {
    NoGradGuard no_grad;
    for (const Tensor& init : initial_slots(param))
      s.slots.emplace_back(init, /*trainable=*/false);
  }
  index_.emplace(param.impl(), states_.size());
  states_.push_back(std::move(s));
  return states_.back();
}

void Optimizer::build(const std::vector<Variable>& params) {
  for (const Variable& p : params) {
    if (!p.defined())
      throw ValueError("[build] expected defined parameters, got an empty one");
    state_for(p);
  }
}

void Optimizer::apply_gradients(const std::vector<Tensor>& grads,
                                const std::vector<Variable>& params) {
  if (grads.size() != params.size())
    throw ValueError(
        "[apply_gradients] expected one gradient per parameter, "
        "got " +
        std::to_string(grads.size()) + " gradients for " +
        std::to_string(params.size()) + " parameters");
  NoGradGuard no_grad;
  std::vector<Tensor> gs;
  std::vector<Variable> ps;
  for (size_t i = 0; i < grads.size(); ++i) {
    if (!params[i].defined())
      throw ValueError("[apply_gradients] expected a defined parameter at " +
                       std::to_string(i) + ", got an empty one");
    // Slots in the list's order, gradient or not: slots() numbers them as
    // build(params) would, so a checkpoint restores each onto its parameter
    // (a first step without a gradient for params[0] numbered it second).
    if (is_floating(params[i].dtype())) state_for(params[i]);
    if (!grads[i].defined()) continue;
    if (!is_floating(grads[i].dtype()))
      throw DTypeError("[apply_gradients] expected a floating gradient at " +
                       std::to_string(i) + ", got " +
                       std::string(dtype_name(grads[i].dtype())));
    if (!(grads[i].shape() == params[i].shape()))
      throw ShapeError("[apply_gradients] expected a gradient of shape " +
                       params[i].shape().str() + " for parameter " +
                       std::to_string(i) + ", got " + grads[i].shape().str());
    if (!is_floating(params[i].dtype()))
      throw DTypeError(
          "[apply_gradients] expected a floating-point parameter at " +
          std::to_string(i) + ", got " +
          std::string(dtype_name(params[i].dtype())));
    gs.push_back(grads[i].dtype() == params[i].dtype()
                     ? grads[i]
                     : cast(grads[i], params[i].dtype()));
    ps.push_back(params[i]);
  }
  if (gs.empty()) return;  // as Keras: no gradient at all is a no-op

  if (common_.clipnorm) {
    for (Tensor& g : gs) g = clip_by_norm(g, *common_.clipnorm);
  } else if (common_.global_clipnorm) {
    gs = clip_by_global_norm(gs, *common_.global_clipnorm).first;
  } else if (common_.clipvalue) {
    for (Tensor& g : gs)
      g = clip_by_value(g, -*common_.clipvalue, *common_.clipvalue);
  }

  const double lr = learning_rate();
  if (common_.weight_decay && *common_.weight_decay != 0.0)
    for (Variable& p : ps) p.assign_sub(p * (*common_.weight_decay * lr));

  for (size_t i = 0; i < gs.size(); ++i) {
    ParamState& s = state_for(ps[i]);
    update(gs[i], s.param, s.slots, lr);
  }
  ++iterations_;
}

void Optimizer::apply_gradients(
    const std::vector<std::pair<Tensor, Variable>>& grads_and_vars) {
  std::vector<Tensor> grads;
  std::vector<Variable> params;
  for (const auto& [grad, param] : grads_and_vars) {
    grads.push_back(grad);
    params.push_back(param);
  }
  apply_gradients(grads, params);
}

std::pair<Tensor, std::vector<Tensor>> Optimizer::compute_gradients(
    const std::function<Tensor()>& loss_fn,
    const std::vector<Variable>& params) {
  if (!loss_fn)
    throw ValueError(
        "[compute_gradients] expected a loss function, got an empty one");
  GradientTape tape;
  for (const Variable& p : params) {
    if (!p.defined())
      throw ValueError(
          "[compute_gradients] expected defined parameters, got an empty one");
    tape.watch(p);
  }
  Tensor loss = loss_fn();
  if (!loss.defined())
    throw ValueError(
        "[compute_gradients] expected loss_fn to return a tensor, got an "
        "empty one");
  std::vector<Tensor> grads =
      tape.gradient(loss, std::vector<Tensor>(params.begin(), params.end()));
  return {std::move(loss), std::move(grads)};
}

Tensor Optimizer::minimize(const std::function<Tensor()>& loss_fn,
                           const std::vector<Variable>& params) {
  if (!loss_fn)
    throw ValueError("[minimize] expected a loss function, got an empty one");
  auto [loss, grads] = compute_gradients(loss_fn, params);
  apply_gradients(grads, params);
  return loss;
}

std::vector<std::pair<std::string, Variable>> Optimizer::slots() const {
  std::vector<std::pair<std::string, Variable>> out;
  const std::lock_guard lock(states_lock_);
  for (size_t i = 0; i < states_.size(); ++i)
    for (size_t j = 0; j < slot_names_.size(); ++j)
      out.emplace_back("param" + std::to_string(i) + "/" + slot_names_[j],
                       states_[i].slots[j]);
  return out;
}

Variable Optimizer::slot(const Variable& param,
                         const std::string& slot_name) const {
  const std::lock_guard lock(states_lock_);
  const auto it = index_.find(param.impl());
  if (it == index_.end())
    throw ValueError("[slot] expected a parameter this " + name_ +
                     " has updated or built, got an unknown one");
  for (size_t j = 0; j < slot_names_.size(); ++j)
    if (slot_names_[j] == slot_name) return states_[it->second].slots[j];
  std::string known;
  for (const auto& n : slot_names_) known += (known.empty() ? "" : ", ") + n;
  throw ValueError("[slot] expected a slot name of " + name_ + " (" + known +
                   "), got \"" + slot_name + "\"");
}

std::vector<Variable> Optimizer::variables() const {
  std::vector<Variable> out;
  const std::lock_guard lock(states_lock_);
  for (const auto& s : states_) out.push_back(s.param);
  return out;
}

}  // namespace tapeflow::optim
