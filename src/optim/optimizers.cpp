// The update rules of tpf::optim's optimizers (formulas in their headers).
// Each runs under the NoGradGuard of Optimizer::apply_gradients.
#include <cmath>

#include "core/op_error.hpp"
#include "optim/apply_ops.hpp"
#include "tapeflow/creation.hpp"
#include "tapeflow/ops/math.hpp"
#include "tapeflow/optim/adadelta.hpp"
#include "tapeflow/optim/adagrad.hpp"
#include "tapeflow/optim/adam.hpp"
#include "tapeflow/optim/adamw.hpp"
#include "tapeflow/optim/momentum.hpp"
#include "tapeflow/optim/rmsprop.hpp"
#include "tapeflow/optim/sgd.hpp"

namespace tapeflow::optim {

namespace {

template <class O>
CommonOptions common_of(const O& o) {
  return {o.weight_decay, o.clipnorm, o.clipvalue, o.global_clipnorm};
}

// A decay rate past 1 grows its average without bound, and NaN poisons it.
void check_rate(const std::string& who, const char* what, double rate) {
  if (!(rate >= 0 && rate <= 1))
    throw op_error<ValueError>(who, "expected ", what, " in [0, 1], got ",
                               rate);
}

// With epsilon 0 a parameter whose gradients are all 0 divides 0 by 0.
void check_epsilon(const std::string& who, double epsilon) {
  if (!(std::isfinite(epsilon) && epsilon > 0))
    throw op_error<ValueError>(who, "expected a finite epsilon > 0, got ",
                               epsilon);
}

std::vector<std::string> names_if(
    std::initializer_list<std::pair<const char*, bool>> names) {
  std::vector<std::string> out;
  for (const auto& [n, on] : names)
    if (on) out.emplace_back(n);
  return out;
}

}  // namespace

// ---- SGD -------------------------------------------------------------------

SGD::SGD(SGDOptions options)
    : Optimizer("SGD", options.learning_rate, common_of(options),
                names_if({{"momentum", options.momentum != 0.0}})),
      options_(std::move(options)) {
  if (!(options_.momentum >= 0.0 && options_.momentum <= 1.0))
    throw ValueError("[SGD] expected momentum in [0, 1], got " +
                     std::to_string(options_.momentum));
}

void SGD::update(const Tensor& g, Variable& w, std::vector<Variable>& slots,
                 double lr) {
  if (slots.empty()) {
    const Tensor in[] = {w, g};
    if (!apply_in_place(ApplyGradientDescent{lr}, in)) w.assign_sub(g * lr);
    return;
  }
  Variable& m = slots[0];
  const double mu = options_.momentum;
  m.assign(m * mu - g * lr);
  if (options_.nesterov)
    w.assign_add(m * mu - g * lr);
  else
    w.assign_add(m);
}

// ---- Momentum --------------------------------------------------------------

Momentum::Momentum(MomentumOptions options)
    : Optimizer("Momentum", options.learning_rate, common_of(options),
                {"momentum"}),
      options_(std::move(options)) {
  check_rate(name(), "momentum", options_.momentum);
}

void Momentum::update(const Tensor& g, Variable& w,
                      std::vector<Variable>& slots, double lr) {
  Variable& a = slots[0];
  const double mu = options_.momentum;
  a.assign(a * mu + g);
  if (options_.nesterov)
    w.assign_sub(g * lr + a * (mu * lr));
  else
    w.assign_sub(a * lr);
}

// ---- Adagrad ---------------------------------------------------------------

Adagrad::Adagrad(AdagradOptions options)
    : Optimizer("Adagrad", options.learning_rate, common_of(options),
                {"accumulator"}),
      options_(std::move(options)) {
  if (!(options_.initial_accumulator_value >= 0.0))
    throw ValueError("[Adagrad] expected initial_accumulator_value >= 0, got " +
                     std::to_string(options_.initial_accumulator_value));
  check_epsilon(name(), options_.epsilon);
}

std::vector<Tensor> Adagrad::initial_slots(const Variable& param) const {
  return {full(param.shape(), options_.initial_accumulator_value, param.dtype(),
               param.device())};
}

void Adagrad::update(const Tensor& g, Variable& w, std::vector<Variable>& slots,
                     double lr) {
  Variable& a = slots[0];
  a.assign_add(square(g));
  w.assign_sub(g * lr / sqrt(a + options_.epsilon));
}

// ---- Adadelta --------------------------------------------------------------

Adadelta::Adadelta(AdadeltaOptions options)
    : Optimizer("Adadelta", options.learning_rate, common_of(options),
                {"accumulated_grad", "accumulated_delta_var"}),
      options_(std::move(options)) {
  check_rate(name(), "rho", options_.rho);
  check_epsilon(name(), options_.epsilon);
}

void Adadelta::update(const Tensor& g, Variable& w,
                      std::vector<Variable>& slots, double lr) {
  Variable& a = slots[0];
  Variable& d = slots[1];
  const double rho = options_.rho, eps = options_.epsilon;
  a.assign(a * rho + square(g) * (1.0 - rho));
  const Tensor u = -sqrt(d + eps) * g / sqrt(a + eps);
  d.assign(d * rho + square(u) * (1.0 - rho));
  w.assign_add(u * lr);
}

// ---- RMSProp ---------------------------------------------------------------

RMSProp::RMSProp(RMSPropOptions options)
    : Optimizer("RMSProp", options.learning_rate, common_of(options),
                names_if({{"velocity", true},
                          {"momentum", options.momentum > 0.0},
                          {"average_gradient", options.centered}})),
      options_(std::move(options)) {
  check_rate(name(), "rho", options_.rho);
  check_rate(name(), "momentum", options_.momentum);
  check_epsilon(name(), options_.epsilon);
}

void RMSProp::update(const Tensor& g, Variable& w, std::vector<Variable>& slots,
                     double lr) {
  const double rho = options_.rho, eps = options_.epsilon;
  const bool has_momentum = options_.momentum > 0.0;
  Variable& v = slots[0];
  v.assign(v * rho + square(g) * (1.0 - rho));
  Tensor den;
  if (options_.centered) {
    Variable& a = slots[has_momentum ? 2 : 1];
    a.assign(a * rho + g * (1.0 - rho));
    den = v - square(a) + eps;
  } else {
    den = v + eps;
  }
  const Tensor inc = g * lr * rsqrt(den);
  if (has_momentum) {
    Variable& m = slots[1];
    m.assign(m * options_.momentum + inc);
    w.assign_sub(m);
  } else {
    w.assign_sub(inc);
  }
}

// ---- Adam, AdamW -----------------------------------------------------------

Adam::Adam(AdamOptions options) : Adam("Adam", options, common_of(options)) {}

Adam::Adam(std::string name, AdamOptions options, CommonOptions common)
    : Optimizer(
          std::move(name), options.learning_rate, common,
          names_if({{"m", true}, {"v", true}, {"vhat", options.amsgrad}})),
      options_(std::move(options)) {
  // beta = 1 makes the bias correction 1 - beta^t zero; beta > 1 diverges.
  const auto check_beta = [&](const char* what, double beta) {
    if (!(beta >= 0 && beta < 1))
      throw op_error<ValueError>(this->name(), "expected ", what,
                                 " in [0, 1), got ", beta);
  };
  check_beta("beta_1", options_.beta_1);
  check_beta("beta_2", options_.beta_2);
  if (!(std::isfinite(options_.epsilon) && options_.epsilon >= 0))
    throw op_error<ValueError>(
        this->name(), "expected a finite epsilon >= 0, got ", options_.epsilon);
}

void Adam::update(const Tensor& g, Variable& w, std::vector<Variable>& slots,
                  double lr) {
  const double b1 = options_.beta_1, b2 = options_.beta_2;
  const double t = static_cast<double>(iterations() + 1);
  const double alpha =
      lr * std::sqrt(1.0 - std::pow(b2, t)) / (1.0 - std::pow(b1, t));
  Variable& m = slots[0];
  Variable& v = slots[1];
  if (!options_.amsgrad) {
    const Tensor in[] = {w, g, m, v};
    if (apply_in_place(ApplyAdam{alpha, b1, b2, options_.epsilon}, in)) return;
  }
  m.assign_add((g - m) * (1.0 - b1));
  v.assign_add((square(g) - v) * (1.0 - b2));
  Tensor denom_v = v;
  if (options_.amsgrad) {
    Variable& vhat = slots[2];
    vhat.assign(maximum(vhat, v));
    denom_v = vhat;
  }
  w.assign_sub(m * alpha / (sqrt(denom_v) + options_.epsilon));
}

AdamW::AdamW(AdamWOptions o)
    : Adam("AdamW",
           AdamOptions{.learning_rate = o.learning_rate,
                       .beta_1 = o.beta_1,
                       .beta_2 = o.beta_2,
                       .epsilon = o.epsilon,
                       .amsgrad = o.amsgrad},
           CommonOptions{.weight_decay = o.weight_decay,
                         .clipnorm = o.clipnorm,
                         .clipvalue = o.clipvalue,
                         .global_clipnorm = o.global_clipnorm}) {}

}  // namespace tapeflow::optim
