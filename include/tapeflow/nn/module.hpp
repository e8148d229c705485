#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tapeflow/autograd.hpp"

namespace tapeflow::nn {

using NamedVariables = std::vector<std::pair<std::string, Variable>>;

/**
 * A layer or model: weights (Variables), child modules, train/eval mode.
 * Weights are made on the first call, when the input's shape is known
 * (Keras' build), unless the layer was told its input size up front.
 */
class Module {
 public:
  explicit Module(std::string type, std::string name = "");
  virtual ~Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;
  /**
   * Moves the weights and children; the moved-from module is empty, and
   * calling or building it is a ValueError (Sequential::add and
   * Bidirectional take layers by value, so one is easily used after).
   */
  Module(Module&& other) noexcept;
  Module& operator=(Module&& other) noexcept;

  /** Builds on the first call, then runs forward(). */
  Tensor operator()(const Tensor& x);
  virtual Tensor forward(const Tensor& x) = 0;
  /**
   * forward() given the mask of padded steps an earlier layer made (Keras'
   * mask propagation in Sequential); layers that use no mask ignore it.
   */
  virtual Tensor forward_masked(const Tensor& x, const Tensor& /*mask*/) {
    return forward(x);
  }
  /** The mask of this layer's output (undefined: none goes further). */
  virtual Tensor output_mask(const Tensor& /*x*/,
                             const Tensor& /*mask*/) const {
    return {};
  }
  /**
   * Makes the weights for inputs of `input_shape` on `device` unless built
   * (Keras' build); operator() does it on the first call. Threads calling
   * one new model at once (Hogwild training) build it once: the others
   * wait for it and use the same weights.
   */
  void build_for(const Shape& input_shape, Device device);

  /** Trainable weights of this module and its children, in creation order. */
  std::vector<Variable> parameters() const;
  /** Trainable weights with hierarchical names, e.g. "conv2d/kernel". */
  NamedVariables named_parameters() const;
  /** Every weight, non-trainable ones (running statistics) included. */
  NamedVariables named_variables() const;
  int64_t count_params(bool trainable_only = false) const;

  /**
   * Moves every weight, children's and non-trainable ones included, to
   * `device` in place: the same Variables, now there (PyTorch's module.to).
   * Make optimizers after moving: slots already made stay where they are.
   * A module built by a call on a device's input builds its weights there.
   */
  void to(Device device);

  /** Training mode (dropout active, batch norm on batch statistics). */
  void train(bool on = true);
  void eval() { train(false); }
  bool is_training() const { return training_; }
  bool built() const { return built_.load(std::memory_order_acquire); }

  const std::string& name() const { return name_; }
  void set_name(std::string name) { name_ = std::move(name); }
  const std::string& type() const { return type_; }
  const std::vector<std::shared_ptr<Module>>& children() const {
    return children_;
  }

 protected:
  /** Makes the weights for inputs of `input_shape` (called once). */
  virtual void build(const Shape& input_shape);

  /** Registers a weight under `name` and returns it. */
  Variable add_weight(const std::string& name, const Tensor& value,
                      bool trainable = true);
  /** Registers a sub-module, after check_child. */
  void add_child(std::shared_ptr<Module> child);
  /** ValueError where `child` is null or contains this module. */
  void check_child(const Module* child) const;
  void mark_built() { built_.store(true, std::memory_order_release); }
  /** ValueError naming this module when it was moved from. */
  void check_not_moved_from() const;

 private:
  void collect(const std::string& prefix, bool trainable_only,
               NamedVariables& out) const;

  std::string type_;
  std::string name_;
  bool training_ = true;
  std::atomic<bool> built_ = false;  // set once the weights are all made
  bool moved_from_ = false;
  std::vector<std::pair<std::string, Variable>> weights_;
  std::vector<bool> trainable_;
  std::vector<std::shared_ptr<Module>> children_;
};

}  // namespace tapeflow::nn
