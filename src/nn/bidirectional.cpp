// Bidirectional: a recurrent layer and its time-reversed twin.
#include <algorithm>

#include "core/op_error.hpp"
#include "tapeflow/nn/layers/recurrent.hpp"
#include "tapeflow/ops/math.hpp"
#include "tapeflow/ops/shape.hpp"

namespace tapeflow::nn {
namespace {

/** The steps of (batch, time, units) in reverse order. */
Tensor reverse_time(const Tensor& y) {
  auto steps = unstack(y, 1);
  if (steps.empty()) return y;
  std::reverse(steps.begin(), steps.end());
  return stack(steps, 1);
}

}  // namespace

Bidirectional::Bidirectional(std::shared_ptr<RNN> layer,
                             BidirectionalOptions options)
    : Module("bidirectional", options.name),
      forward_(std::move(layer)),
      options_(std::move(options)) {
  const std::string& mode = options_.merge_mode;
  if (mode != "concat" && mode != "sum" && mode != "mul" && mode != "ave")
    throw op_error<ValueError>(
        name(), "expected merge_mode concat, sum, mul or ave, got \"", mode,
        "\"");
  if (!forward_)
    throw op_error<ValueError>(name(), "expected a recurrent layer, got null");
  if (forward_->built())
    throw op_error<ValueError>(name(), "expected an unbuilt layer, got ",
                               forward_->name(), " with weights already");
  backward_ = forward_->reversed();
  const std::string inner = forward_->name();
  forward_->set_name("forward_" + inner);
  backward_->set_name("backward_" + inner);
  add_child(forward_);
  add_child(backward_);
}

Tensor Bidirectional::merge(const Tensor& a, const Tensor& b) const {
  const std::string& mode = options_.merge_mode;
  if (mode == "concat") return concat({a, b}, -1);
  if (mode == "sum") return a + b;
  if (mode == "mul") return a * b;
  return (a + b) * 0.5;
}

RNNResult Bidirectional::call(const Tensor& x, const RNNCall& args) {
  check_not_moved_from();
  const size_t n = forward_->cell().state_count();
  RNNCall forward_args{args.mask, {}}, backward_args{args.mask, {}};
  if (!args.initial_state.empty()) {
    if (args.initial_state.size() != 2 * n)
      throw op_error<ValueError>(name(), "expected ", 2 * n,
                                 " initial state tensors (forward's, then "
                                 "backward's), got ",
                                 args.initial_state.size());
    forward_args.initial_state.assign(args.initial_state.begin(),
                                      args.initial_state.begin() + n);
    backward_args.initial_state.assign(args.initial_state.begin() + n,
                                       args.initial_state.end());
  }
  RNNResult f = forward_->call(x, forward_args);
  RNNResult b = backward_->call(x, backward_args);
  // The backward layer emits its steps in its walk order (last step first).
  const Tensor b_out =
      forward_->options().return_sequences ? reverse_time(b.output) : b.output;
  RNNResult r{merge(f.output, b_out), std::move(f.states)};
  r.states.insert(r.states.end(), b.states.begin(), b.states.end());
  return r;
}

Tensor Bidirectional::output_mask(const Tensor& x, const Tensor& mask) const {
  return forward_layer().output_mask(x, mask);
}

RNN& Bidirectional::forward_layer() const {
  check_not_moved_from();
  return *forward_;
}
RNN& Bidirectional::backward_layer() const {
  check_not_moved_from();
  return *backward_;
}

}  // namespace tapeflow::nn
