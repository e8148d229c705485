#include "tapeflow/nn/module.hpp"

#include <mutex>

#include "core/creation_internal.hpp"
#include "core/op_error.hpp"
#include "tapeflow/device_scope.hpp"

namespace tapeflow::nn {

Module::Module(std::string type, std::string name)
    : type_(std::move(type)), name_(name.empty() ? type_ : std::move(name)) {}

Module::Module(Module&& other) noexcept
    : type_(other.type_),  // copied: the moved-from one's errors name it
      name_(other.name_),
      training_(other.training_),
      built_(other.built_.load()),
      moved_from_(std::exchange(other.moved_from_, true)),
      weights_(std::move(other.weights_)),
      trainable_(std::move(other.trainable_)),
      children_(std::move(other.children_)) {}

Module& Module::operator=(Module&& other) noexcept {
  if (this != &other) {
    type_ = other.type_;
    name_ = other.name_;
    training_ = other.training_;
    built_ = other.built_.load();
    moved_from_ = std::exchange(other.moved_from_, true);
    weights_ = std::move(other.weights_);
    trainable_ = std::move(other.trainable_);
    children_ = std::move(other.children_);
  }
  return *this;
}

void Module::check_not_moved_from() const {
  if (moved_from_)
    throw op_error<ValueError>(name_,
                               "expected a layer, got a moved-from one (it "
                               "was handed to a model or another layer)");
}

Tensor Module::operator()(const Tensor& x) {
  build_for(x.shape(), x.device());
  return forward(x);
}

void Module::build_for(const Shape& input_shape, Device device) {
  check_not_moved_from();
  if (built()) return;
  // One lock for every module's build, recursive: a layer builds its cells
  // inside its own build, and builds happen once, so nothing waits long.
  static std::recursive_mutex building;
  const std::lock_guard lock(building);
  if (built()) return;
  build(input_shape);
  // Built once the weights exist, even if moving them fails; other threads
  // see it only after the move.
  struct MarkBuilt {
    Module& module;
    ~MarkBuilt() { module.mark_built(); }
  } const mark{*this};
  // Weights where the data is, or where a DeviceScope puts them.
  to(DeviceScope::current().value_or(device));
}

void Module::to(Device device) {
  for (const auto& [name, v] : named_variables()) move_variable(v, device);
}

void Module::build(const Shape&) {}

Variable Module::add_weight(const std::string& name, const Tensor& value,
                            bool trainable) {
  for (const auto& [existing, v] : weights_)
    if (existing == name)
      throw op_error<ValueError>(name_, "expected a new weight name, got \"",
                                 name, "\" twice");
  Variable v(value, trainable);
  weights_.emplace_back(name, v);
  trainable_.push_back(trainable);
  return v;
}

namespace {
bool contains(const Module& module, const Module* target) {
  for (const auto& child : module.children())
    if (child.get() == target || contains(*child, target)) return true;
  return false;
}
}  // namespace

void Module::check_child(const Module* child) const {
  if (child == nullptr)
    throw op_error<ValueError>(name_, "expected a layer, got null");
  // A module inside itself would recurse without end on every call.
  if (child == this || contains(*child, this))
    throw op_error<ValueError>(
        name_, "expected a layer that does not contain \"", name_, "\", got \"",
        child->name(), "\", which does");
}

void Module::add_child(std::shared_ptr<Module> child) {
  check_child(child.get());
  for (const auto& c : children_)
    if (c->name() == child->name())
      throw op_error<ValueError>(name_, "expected unique layer names, got \"",
                                 child->name(), "\" twice");
  children_.push_back(std::move(child));
}

void Module::collect(const std::string& prefix, bool trainable_only,
                     NamedVariables& out) const {
  const std::string base = prefix.empty() ? name_ : prefix + "/" + name_;
  for (size_t i = 0; i < weights_.size(); ++i)
    if (!trainable_only || trainable_[i])
      out.emplace_back(base + "/" + weights_[i].first, weights_[i].second);
  for (const auto& c : children_) c->collect(base, trainable_only, out);
}

NamedVariables Module::named_parameters() const {
  NamedVariables out;
  collect("", true, out);
  return out;
}

NamedVariables Module::named_variables() const {
  NamedVariables out;
  collect("", false, out);
  return out;
}

std::vector<Variable> Module::parameters() const {
  std::vector<Variable> out;
  for (auto& [name, v] : named_parameters()) out.push_back(v);
  return out;
}

int64_t Module::count_params(bool trainable_only) const {
  int64_t n = 0;
  for (auto& [name, v] :
       trainable_only ? named_parameters() : named_variables())
    n += v.numel();
  return n;
}

void Module::train(bool on) {
  training_ = on;
  for (auto& c : children_) c->train(on);
}

}  // namespace tapeflow::nn
