#pragma once
// Convolution op structs: one N-d forward and its two linear adjoints, each a
// registered op so that every gradient rule is one line and gradients of any
// order stay convolutions. Layouts are channels-first: x (N, C, spatial...),
// filter (O, C / groups, k...); the public functions transpose other layouts.
#include <memory>

#include "ops/converted_operand.hpp"
#include "ops/elementwise_ops.hpp"

namespace tapeflow {

/** Geometry of a convolution; every Shape has one entry per spatial axis. */
struct ConvAttrs {
  Shape strides, dilations, pads_before, pads_after;
  int64_t groups = 1;

  int64_t spatial() const { return strides.size(); }
  /** Output shape of the forward conv of x by filter. */
  Shape output_shape(const Shape& x, const Shape& filter) const;
};

/**
 * What the passes of one recorded convolution hand each other, converted
 * into oneDNN's blocked layouts: the forward leaves x and the input gradient
 * leaves dy for the filter gradient.
 */
struct ConvHandoff {
  ConvertedOperand x, dy;
};

/**
 * y = conv(x, filter) [+ bias]. Inputs: x, filter and optionally bias (O,),
 * which oneDNN adds in the same pass (no separate sweep over y).
 */
struct Conv {
  static constexpr const char* name = "conv";
  static constexpr int save = kSaveInputs;
  ConvAttrs attrs;
  std::shared_ptr<ConvHandoff> handoff = nullptr;  // null: keep no converted x
  TensorSpec infer(Inputs in) const;
  Grads vjp(const VjpArgs& a) const;
};

/** dx of Conv: linear in both inputs. Inputs: dy, filter. */
struct ConvGradInput {
  static constexpr const char* name = "conv_grad_input";
  static constexpr int save = kSaveInputs;
  ConvAttrs attrs;
  Shape input_shape;
  std::shared_ptr<ConvHandoff> handoff =
      nullptr;  // non-null: leave the converted dy
  TensorSpec infer(Inputs in) const { return {input_shape, in[0].dtype()}; }
  Grads vjp(const VjpArgs& a) const;
};

/** dfilter of Conv: linear in both inputs. Inputs: x, dy. */
struct ConvGradFilter {
  static constexpr const char* name = "conv_grad_filter";
  static constexpr int save = kSaveInputs;
  ConvAttrs attrs;
  Shape filter_shape;
  std::shared_ptr<ConvHandoff> handoff =
      nullptr;  // non-null: take x and dy from it
  TensorSpec infer(Inputs in) const { return {filter_shape, in[0].dtype()}; }
  Grads vjp(const VjpArgs& a) const;
};

}  // namespace tapeflow
