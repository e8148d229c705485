// SimpleRNNCell, LSTMCell and GRUCell: Keras' formulas from public ops.
#include "tapeflow/nn/layers/recurrent_cells.hpp"

#include "core/checked.hpp"
#include "core/op_error.hpp"
#include "nn/lstm_sequence.hpp"
#include "tapeflow/creation.hpp"
#include "tapeflow/nn/dropout.hpp"
#include "tapeflow/ops/linalg.hpp"
#include "tapeflow/ops/math.hpp"
#include "tapeflow/ops/shape.hpp"

namespace tapeflow::nn {
namespace {

/** (batch, gates × u) -> gates tensors (batch, u); their gradient is one stack.
 */
std::vector<Tensor> gate_parts(const Tensor& z, int64_t gates) {
  return unstack(reshape(z, {z.shape()[0], gates, z.shape()[1] / gates}), 1);
}

/** True for Keras' default LSTM activations: tanh, sigmoid gates. */
bool keras_activations(const RNNOptions& o) {
  using Function = Tensor (*)(const Tensor&);
  const auto* act = o.activation.target<Function>();
  const auto* gate = o.recurrent_activation.target<Function>();
  return act && *act == &nn::tanh && gate && *gate == &nn::sigmoid;
}

/** act(x), or x when the activation is none (Keras' activation=None). */
Tensor activate(const Activation& act, const Tensor& x) {
  return act ? act(x) : x;
}

}  // namespace

RecurrentCell::RecurrentCell(std::string type, int64_t units, int64_t gates,
                             RNNOptions options)
    : Module(std::move(type), options.name),
      gates_(gates),
      options_(std::move(options)),
      units_(units) {
  if (units <= 0)
    throw op_error<ValueError>(name(), "expected units > 0, got ", units);
  // gates_ * units_ is every projection's width.
  checked_mul(gates, units, name(), "the gates' width (gates * units)");
  for (double rate : {options_.dropout, options_.recurrent_dropout})
    if (!(rate >= 0 && rate < 1))
      throw op_error<ValueError>(
          name(), "expected dropout rates in [0, 1), got ", rate);
  if (!is_floating(options_.dtype))
    throw op_error<DTypeError>(name(), "expected a floating dtype, got ",
                               dtype_name(options_.dtype));
}

void RecurrentCell::build(const Shape& input_shape) {
  if (input_shape.empty())
    throw op_error<ShapeError>(
        name(), "expected inputs (batch, features), got ", input_shape.str());
  const int64_t in = input_shape.back(), u = units_, g = gates_ * u;
  kernel_ = add_weight(
      "kernel", options_.kernel_initializer({in, g}, in, g, options_.dtype));
  recurrent_kernel_ =
      add_weight("recurrent_kernel",
                 options_.recurrent_initializer({u, g}, u, g, options_.dtype));
  if (options_.use_bias) bias_ = add_weight("bias", initial_bias(in));
}

Tensor RecurrentCell::initial_bias(int64_t in) {
  const int64_t g = gates_ * units_;
  return options_.bias_initializer({g}, in, g, options_.dtype);
}

std::vector<Tensor> RecurrentCell::zero_states(int64_t batch,
                                               Device device) const {
  return std::vector<Tensor>(state_count(),
                             zeros({batch, units_}, options_.dtype, device));
}

void RecurrentCell::reset_dropout_masks() {
  input_mask_.reset();
  recurrent_mask_.reset();
}

Tensor RecurrentCell::mask_for(std::optional<Tensor>& mask, const Tensor& like,
                               double rate) {
  if (rate == 0 || !is_training()) return {};
  if (!mask) {
    // One draw per sequence, kept for every step (Keras' cached masks).
    const int64_t width = like.shape().back();
    mask = dropout(ones({like.shape()[0], width}, like.dtype(), like.device()),
                   rate, true, {}, options_.seed);
    if (options_.seed) ++*options_.seed;
  }
  return *mask;
}

Tensor RecurrentCell::project_inputs(const Tensor& x) {
  const int64_t in = kernel_.shape()[0];
  if (x.rank() < 2 || x.shape().back() != in)
    throw op_error<ShapeError>(name(), "expected inputs (batch, ..., ", in,
                               "), got ", x.shape().str());
  Tensor xs = x;
  const Tensor m = mask_for(input_mask_, x, options_.dropout);
  if (m.defined())
    xs = x * (x.rank() == 2 ? m : reshape(m, {x.shape()[0], 1, in}));
  // The row count named, not -1: zero features leave -1 undetermined.
  int64_t rows = 1;
  for (int64_t i = 0; i + 1 < x.rank(); ++i)
    rows = checked_mul(rows, x.shape()[i], name(), "the input row count");
  Tensor z = matmul(reshape(xs, {rows, in}), kernel_);
  if (options_.use_bias) z = z + input_bias();
  Shape out = x.shape();
  out[out.size() - 1] = gates_ * units_;
  return reshape(z, out);
}

std::vector<Tensor> RecurrentCell::walk_projected(const Tensor&,
                                                  const std::vector<Tensor>&,
                                                  bool, bool) {
  return {};
}

Tensor RecurrentCell::dropped_state(const Tensor& h) {
  const Tensor m = mask_for(recurrent_mask_, h, options_.recurrent_dropout);
  return m.defined() ? h * m : h;
}

std::vector<Tensor> RecurrentCell::step(const Tensor& x_t,
                                        const std::vector<Tensor>& states) {
  build_for(x_t.shape(), x_t.device());
  if (x_t.rank() != 2)
    throw op_error<ShapeError>(
        name(), "expected inputs (batch, features), got ", x_t.shape().str());
  return step_projected(project_inputs(x_t), states);  // checks the states
}

void RecurrentCell::check_states(const std::vector<Tensor>& states,
                                 int64_t batch) const {
  const Shape state_shape{batch, units_};
  if (states.size() != state_count())
    throw op_error<ValueError>(name(), "expected ", state_count(),
                               " state tensors, got ", states.size());
  for (const Tensor& s : states)
    if (!s.defined() || s.shape() != state_shape)
      throw op_error<ShapeError>(name(), "expected states of shape ",
                                 state_shape.str(), ", got ",
                                 s.defined() ? s.shape().str() : "none");
}

void RecurrentCell::check_projected(const Tensor& projected,
                                    int64_t rank) const {
  if (!built())
    throw op_error<ValueError>(name(),
                               "expected a built cell (call it or build_for "
                               "first), got one without weights");
  const int64_t width = gates_ * units_;
  if (!projected.defined() || projected.rank() != rank ||
      projected.shape().back() != width)
    throw op_error<ShapeError>(
        name(), "expected projected inputs (",
        rank == 2 ? "batch, " : "batch, time, ", width, "), got ",
        projected.defined() ? projected.shape().str() : "none");
}

Tensor RecurrentCell::forward(const Tensor& x_t) {
  return step(x_t, zero_states(x_t.shape()[0], x_t.device()))[0];
}

SimpleRNNCell::SimpleRNNCell(int64_t units, RNNOptions options)
    : RecurrentCell("simple_rnn_cell", units, 1, std::move(options)) {}

std::vector<Tensor> SimpleRNNCell::step_projected(
    const Tensor& projected_t, const std::vector<Tensor>& states) {
  check_projected(projected_t, 2);
  check_states(states, projected_t.shape()[0]);
  const Tensor z =
      projected_t + matmul(dropped_state(states[0]), recurrent_kernel_);
  return {activate(options_.activation, z)};
}

LSTMCell::LSTMCell(int64_t units, RNNOptions options)
    : RecurrentCell("lstm_cell", units, 4, std::move(options)) {}

Tensor LSTMCell::initial_bias(int64_t in) {
  if (!options_.unit_forget_bias) return RecurrentCell::initial_bias(in);
  const int64_t u = units();
  const auto init = [&](int64_t n) {
    return options_.bias_initializer({n}, in, 4 * u, options_.dtype);
  };
  return concat({init(u), ones({u}, options_.dtype), init(2 * u)}, 0);
}

LSTMState LSTMCell::operator()(const Tensor& x_t, const LSTMState& state) {
  const auto s = step(x_t, {state.h, state.c});
  return {s[0], s[1]};
}

std::vector<Tensor> LSTMCell::step_projected(
    const Tensor& projected_t, const std::vector<Tensor>& states) {
  check_projected(projected_t, 2);
  check_states(states, projected_t.shape()[0]);
  const Tensor z =
      projected_t + matmul(dropped_state(states[0]), recurrent_kernel_);
  if (keras_activations(options_))
    if (auto fused = detail::lstm_cell_step(z, states[1]); !fused.empty())
      return fused;
  const auto g = gate_parts(z, 4);
  const auto act = [&](const Tensor& t) {
    return activate(options_.activation, t);
  };
  const auto gate = [&](const Tensor& t) {
    return activate(options_.recurrent_activation, t);
  };
  const Tensor c = gate(g[1]) * states[1] + gate(g[0]) * act(g[2]);
  return {gate(g[3]) * act(c), c};
}

std::vector<Tensor> LSTMCell::walk_projected(const Tensor& projected,
                                             const std::vector<Tensor>& states,
                                             bool go_backwards,
                                             bool return_sequences) {
  check_projected(projected, 3);
  check_states(states, projected.shape()[0]);
  if (!keras_activations(options_) || options_.recurrent_dropout != 0.0)
    return {};
  return detail::lstm_sequence(projected, states[0], states[1],
                               recurrent_kernel_, go_backwards,
                               return_sequences);
}

GRUCell::GRUCell(int64_t units, RNNOptions options)
    : RecurrentCell("gru_cell", units, 3, std::move(options)) {}

Tensor GRUCell::initial_bias(int64_t in) {
  if (!options_.reset_after) return RecurrentCell::initial_bias(in);
  const int64_t g = 3 * units();
  return options_.bias_initializer({2, g}, in, g, options_.dtype);
}

Tensor GRUCell::input_bias() const {
  if (!options_.reset_after) return bias_;
  return reshape(slice(bias_, {0, 0}, {1, -1}), {-1});
}

Tensor GRUCell::operator()(const Tensor& x_t, const Tensor& h) {
  return step(x_t, {h})[0];
}

std::vector<Tensor> GRUCell::step_projected(const Tensor& projected_t,
                                            const std::vector<Tensor>& states) {
  check_projected(projected_t, 2);
  check_states(states, projected_t.shape()[0]);
  const Tensor& h = states[0];
  const Tensor h_in = dropped_state(h);
  const auto x = gate_parts(projected_t, 3);
  const auto gate = [&](const Tensor& t) {
    return activate(options_.recurrent_activation, t);
  };
  Tensor z, r, hh;
  if (options_.reset_after) {
    Tensor inner = matmul(h_in, recurrent_kernel_);
    if (options_.use_bias)
      inner = inner + reshape(slice(bias_, {1, 0}, {1, -1}), {-1});
    const auto rec = gate_parts(inner, 3);
    z = gate(x[0] + rec[0]);
    r = gate(x[1] + rec[1]);
    hh = activate(options_.activation, x[2] + r * rec[2]);
  } else {
    const int64_t u = units();
    const auto rk = split(recurrent_kernel_, {2 * u, u}, 1);
    const auto rec = gate_parts(matmul(h_in, rk[0]), 2);
    z = gate(x[0] + rec[0]);
    r = gate(x[1] + rec[1]);
    hh = activate(options_.activation, x[2] + matmul(r * h_in, rk[1]));
  }
  return {z * h + (1.0 - z) * hh};
}

}  // namespace tapeflow::nn
