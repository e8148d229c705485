// The recurrent layers: a cell walked over the time axis.
#include "tapeflow/nn/layers/recurrent.hpp"

#include <algorithm>

#include "core/op_error.hpp"
#include "tapeflow/creation.hpp"
#include "tapeflow/ops/math.hpp"
#include "tapeflow/ops/shape.hpp"

namespace tapeflow::nn {
namespace {

/** options with go_backwards flipped: the twin a Bidirectional needs. */
RNNOptions flipped(RNNOptions options) {
  options.go_backwards = !options.go_backwards;
  return options;
}

/** The cell's options: Keras names a cell by its type alone. */
RNNOptions for_cell(RNNOptions options) {
  options.name.clear();
  return options;
}

/** (batch, time) steps to keep, one bool_ (batch, 1) tensor per step. */
std::vector<Tensor> step_masks(const Tensor& mask, const Shape& x_shape,
                               const std::string& op) {
  if (!mask.defined()) return {};
  const Shape expected{x_shape[0], x_shape[1]};
  if (mask.shape() != expected)
    throw op_error<ShapeError>(op, "expected a mask of shape ", expected.str(),
                               ", got ", mask.shape().str());
  const Tensor keep =
      mask.dtype() == bool_ ? mask : not_equal(mask, zeros_like(mask));
  std::vector<Tensor> steps;
  for (const Tensor& m : unstack(keep, 1))
    steps.push_back(reshape(m, {x_shape[0], 1}));
  return steps;
}

}  // namespace

RNN::RNN(std::shared_ptr<RecurrentCell> cell, std::string type,
         std::string name)
    : Module(std::move(type), std::move(name)), cell_(std::move(cell)) {
  add_child(cell_);
}

RecurrentCell& RNN::cell() const {
  check_not_moved_from();
  return *cell_;
}

void RNN::build(const Shape& input_shape) {
  if (input_shape.size() != 3)
    throw op_error<ShapeError>(name(),
                               "expected inputs (batch, time, features), got ",
                               input_shape.str());
  cell_->build_for({input_shape[0], input_shape[2]}, Device::cpu());
}

std::shared_ptr<RNN> RNN::reversed() const {
  throw op_error<ValueError>(name(),
                             "expected a layer that can make its "
                             "time-reversed twin, got a plain RNN");
}

std::vector<Tensor> RNN::first_states(const Tensor& x,
                                      const RNNCall& args) const {
  if (args.initial_state.empty())
    return cell_->zero_states(x.shape()[0], x.device());
  const Shape expected{x.shape()[0], cell_->units()};
  if (args.initial_state.size() != cell_->state_count())
    throw op_error<ValueError>(name(), "expected ", cell_->state_count(),
                               " initial state tensors, got ",
                               args.initial_state.size());
  for (const Tensor& s : args.initial_state)
    if (!s.defined() || s.shape() != expected)
      throw op_error<ShapeError>(name(), "expected initial states of shape ",
                                 expected.str(), ", got ",
                                 s.defined() ? s.shape().str() : "none");
  return args.initial_state;
}

RNNResult RNN::call(const Tensor& x, const RNNCall& args) {
  build_for(x.shape(), x.device());
  if (x.rank() != 3)
    throw op_error<ShapeError>(name(),
                               "expected inputs (batch, time, features), got ",
                               x.shape().str());
  const RNNOptions& opt = cell_->options();
  const auto keep = step_masks(args.mask, x.shape(), name());
  std::vector<Tensor> states = first_states(x, args);
  cell_->reset_dropout_masks();
  const Tensor projected = cell_->project_inputs(x);
  if (keep.empty()) {
    std::vector<Tensor> walked = cell_->walk_projected(
        projected, states, opt.go_backwards, opt.return_sequences);
    if (!walked.empty()) {
      RNNResult r;
      r.output = walked[0];
      if (opt.return_state)
        r.states.assign(walked.end() - cell_->state_count(), walked.end());
      return r;
    }
  }
  const auto steps = unstack(projected, 1);
  const int64_t time = x.shape()[1];
  std::vector<Tensor> outputs;
  // Padded steps before the first real one output zeros, not the initial
  // state (Keras on TensorFlow starts its previous output at zeros).
  Tensor last = zeros_like(states[0]);
  for (int64_t i = 0; i < time; ++i) {
    const int64_t t = opt.go_backwards ? time - 1 - i : i;
    std::vector<Tensor> next = cell_->step_projected(steps[t], states);
    Tensor out = next[0];
    if (!keep.empty()) {
      // A padded step leaves the states as they were (Keras).
      out = where(keep[t], next[0],
                  opt.zero_output_for_mask ? zeros_like(next[0]) : last);
      for (size_t s = 0; s < next.size(); ++s)
        next[s] = where(keep[t], next[s], states[s]);
    }
    states = std::move(next);
    last = out;
    if (opt.return_sequences) outputs.push_back(out);
  }
  RNNResult r;
  if (!opt.return_sequences)
    r.output = time > 0 ? last : zeros_like(states[0]);
  else if (time > 0)
    r.output = stack(outputs, 1);
  else
    r.output =
        zeros({x.shape()[0], 0, cell_->units()}, states[0].dtype(), x.device());
  if (opt.return_state) r.states = std::move(states);
  return r;
}

Tensor RNN::output_mask(const Tensor&, const Tensor& mask) const {
  return options().return_sequences ? mask : Tensor();
}

SimpleRNN::SimpleRNN(int64_t units, RNNOptions options)
    : RNN(std::make_shared<SimpleRNNCell>(units, for_cell(options)),
          "simple_rnn", options.name) {}

std::shared_ptr<RNN> SimpleRNN::reversed() const {
  return std::make_shared<SimpleRNN>(cell().units(), flipped(options()));
}

LSTM::LSTM(int64_t units, RNNOptions options)
    : RNN(std::make_shared<LSTMCell>(units, for_cell(options)), "lstm",
          options.name) {}

std::shared_ptr<RNN> LSTM::reversed() const {
  return std::make_shared<LSTM>(cell().units(), flipped(options()));
}

GRU::GRU(int64_t units, RNNOptions options)
    : RNN(std::make_shared<GRUCell>(units, for_cell(options)), "gru",
          options.name) {}

std::shared_ptr<RNN> GRU::reversed() const {
  return std::make_shared<GRU>(cell().units(), flipped(options()));
}

}  // namespace tapeflow::nn
