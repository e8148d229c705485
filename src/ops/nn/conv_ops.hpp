#pragma once
// Convolution op structs: one N-d forward and its two linear adjoints, each a
// registered op so that every gradient rule is one line and gradients of any
// order stay convolutions. Layouts are channels-first: x (N, C, spatial...),
// filter (O, C / groups, k...); the public functions transpose other layouts.
#include "ops/op.hpp"

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
 * y = conv(x, filter) [+ bias]. Inputs: x, filter and optionally bias (O,),
 * which oneDNN adds in the same pass (no separate sweep over y). The kernel
 * may leave x as it converted it: the payload the filter gradient takes.
 */
struct Conv {
  static constexpr const char* name = "conv";
  static constexpr int save = kSaveInputs;
  ConvAttrs attrs;
  TensorSpec infer(Inputs in) const;
  Grads vjp(const VjpArgs& a) const;
};

/**
 * y = relu(conv(x, filter) [+ bias]): Conv with the rectifier applied where
 * the kernel writes y, instead of a second op that sweeps y into a second
 * tensor (nn::conv2d_relu, and the conv layers with activation relu).
 * Inputs and payload as Conv's; keeps y too, for relu's rule before Conv's.
 */
struct ConvRelu {
  static constexpr const char* name = "conv_relu";
  static constexpr int save = kSaveInputs | kSaveOutput;
  ConvAttrs attrs;
  TensorSpec infer(Inputs in) const {
    return {attrs.output_shape(in[0].shape(), in[1].shape()), in[0].dtype()};
  }
  Grads vjp(const VjpArgs& a) const;
};

/**
 * dx of Conv: linear in both inputs. Inputs: dy, filter. The kernel may
 * leave dy as it converted it, for the filter gradient of the same step.
 */
struct ConvGradInput {
  static constexpr const char* name = "conv_grad_input";
  static constexpr int save = kSaveInputs;
  ConvAttrs attrs;
  Shape input_shape;
  TensorSpec infer(Inputs in) const { return {input_shape, in[0].dtype()}; }
  Grads vjp(const VjpArgs& a) const;
};

/**
 * dfilter of Conv: linear in both inputs. Inputs: x, dy. The payloads of the
 * forward and of the input gradient, when given, hold x and dy already
 * converted; the kernel takes what matches its own pass.
 */
struct ConvGradFilter {
  static constexpr const char* name = "conv_grad_filter";
  static constexpr int save = kSaveInputs;
  ConvAttrs attrs;
  Shape filter_shape;
  PayloadPtr x_converted = nullptr, dy_converted = nullptr;
  TensorSpec infer(Inputs in) const { return {filter_shape, in[0].dtype()}; }
  Grads vjp(const VjpArgs& a) const;
};

}  // namespace tapeflow
