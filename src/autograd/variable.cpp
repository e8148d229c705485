#include "autograd/tape_state.hpp"
#include "autograd/variable_observer.hpp"
#include "core/creation_internal.hpp"
#include "core/op_error.hpp"
#include "core/registry.hpp"
#include "tapeflow/autograd.hpp"
#include "tapeflow/creation.hpp"
#include "tapeflow/device_scope.hpp"
#include "tapeflow/ops/math.hpp"

namespace tapeflow {

Variable::Variable(const Tensor& initial_value, bool trainable) {
  if (!initial_value.defined())
    throw ValueError(
        "[Variable] expected an initial value, got an empty tensor");
  // Inside a DeviceScope the variable lives on the scope's device.
  const Device device = DeviceScope::current().value_or(initial_value.device());
  Tensor copy =
      empty_tensor(initial_value.shape(), initial_value.dtype(), device);
  {
    NoGradGuard no_grad;  // the initial value's history stays behind
    write_into(copy, initial_value.to(device), "Variable");
  }
  impl_ = copy.impl_ptr();
  impl_->trainable = trainable;
  impl_->variable = true;
  if (auto* observe = autograd::variable_observer()) (*observe)(*this);
}

autograd::VariableObserver*& autograd::variable_observer() {
  thread_local VariableObserver* observer = nullptr;
  return observer;
}

namespace {

/** A Variable keeps its dtype: a value of another one is an error, not a
 * silent cast (as in TensorFlow). */
void check_dtype_of(const char* op, const char* what, const Tensor& v,
                    const Tensor& value) {
  if (!value.defined())
    throw op_error<ValueError>(op, "expected a ", what,
                               ", got an empty tensor");
  if (value.dtype() != v.dtype())
    throw op_error<DTypeError>(op, "expected a ", what, " of dtype ",
                               dtype_name(v.dtype()), " (the variable's), got ",
                               dtype_name(value.dtype()));
}

}  // namespace

void Variable::assign(const Tensor& value) {
  check_dtype_of("assign", "value", *this, value);
  if (!(value.shape() == shape()))
    throw op_error<ShapeError>("assign", "expected a value of shape ",
                               shape().str(), " (the variable's), got ",
                               value.shape().str());
  write_into(*this, value, "assign");
}

namespace {
/**
 * assign_add's and assign_sub's delta: the variable's dtype and shape (TF's
 * AssignAddVariableOp broadcasts nothing), and a number.
 */
void check_delta(const char* op, const Tensor& v, const Tensor& delta) {
  check_dtype_of(op, "delta", v, delta);
  if (v.dtype() == bool_ || is_string(v.dtype()))
    throw op_error<DTypeError>(op, "expected a numeric variable, got ",
                               dtype_name(v.dtype()));
  if (!(delta.shape() == v.shape()))
    throw op_error<ShapeError>(op, "expected a delta of shape ",
                               v.shape().str(), " (the variable's), got ",
                               delta.shape().str());
}
}  // namespace

void Variable::assign_add(const Tensor& delta) {
  check_delta("assign_add", *this, delta);
  NoGradGuard no_grad;
  assign(add(*this, delta));
}

void Variable::assign_sub(const Tensor& delta) {
  check_delta("assign_sub", *this, delta);
  NoGradGuard no_grad;
  assign(sub(*this, delta));
}

Tensor stop_gradient(const Tensor& x) {
  return make_view(x, x.shape(), x.strides(), x.offset());
}

namespace {

/** A node whose backward is the user's function from custom_gradient. */
class CustomNode final : public autograd::Node {
 public:
  CustomNode(GradFunction grad, std::vector<autograd::TensorSpec> outs)
      : grad_(std::move(grad)), outs_(std::move(outs)) {}
  const char* name() const override { return "custom_gradient"; }
  std::vector<Tensor> backward(std::span<const Tensor> grads,
                               uint32_t) const override {
    std::vector<Tensor> full(grads.begin(), grads.end());
    for (size_t i = 0; i < full.size(); ++i)
      if (!full[i].defined())
        full[i] = zeros(outs_[i].shape, outs_[i].dtype, outs_[i].device);
    std::vector<Tensor> gx = grad_(full);
    if (gx.size() != input_specs.size())
      throw ValueError(
          "[custom_gradient] expected the gradient function to return " +
          std::to_string(input_specs.size()) + " gradients, got " +
          std::to_string(gx.size()));
    for (size_t i = 0; i < gx.size(); ++i) check_gradient(i, gx[i]);
    return gx;
  }

 private:
  /**
   * The user's gradient must match its input as TensorFlow requires; the
   * tape would otherwise sum a wrong-shaped one down to fit, silently.
   */
  void check_gradient(size_t i, const Tensor& g) const {
    if (!g.defined()) return;  // no gradient for this input
    const autograd::TensorSpec& x = input_specs[i];
    if (g.shape() != x.shape)
      throw op_error<ShapeError>(
          "custom_gradient", "expected the gradient of input ", i,
          " to have its shape ", x.shape.str(), ", got ", g.shape().str());
    if (g.dtype() != x.dtype)
      throw op_error<DTypeError>("custom_gradient",
                                 "expected the gradient of input ", i,
                                 " to have its dtype ", dtype_name(x.dtype),
                                 ", got ", dtype_name(g.dtype()));
  }

  GradFunction grad_;
  std::vector<autograd::TensorSpec> outs_;
};

}  // namespace

std::vector<Tensor> custom_gradient(
    const std::function<CustomResult(const std::vector<Tensor>&)>& forward,
    const std::vector<Tensor>& inputs) {
  if (!forward)
    throw ValueError("[custom_gradient] expected a forward function, got none");
  CustomResult r;
  {
    NoGradGuard no_grad;
    r = forward(inputs);
  }
  if (!r.grad)
    throw ValueError(
        "[custom_gradient] expected a gradient function, got none");
  std::vector<Tensor> outs;
  std::vector<autograd::TensorSpec> specs;
  for (const Tensor& y : r.outputs) {
    // Fresh handles: an output that is one of the inputs must not be re-marked.
    outs.push_back(make_view(y, y.shape(), y.strides(), y.offset()));
    specs.push_back({y.shape(), y.dtype(), y.device()});
  }
  if (autograd::g_recording_tapes == 0) return outs;
  auto make = [&] {
    auto node = std::make_shared<CustomNode>(r.grad, specs);
    for (const Tensor& x : inputs)
      node->input_specs.push_back({x.shape(), x.dtype(), x.device()});
    return std::shared_ptr<autograd::Node>(node);
  };
  autograd::record_node(inputs, outs, autograd::NodeFactory(make));
  return outs;
}

}  // namespace tapeflow
