#pragma once
// Convolutions (tpf::nn): conv1d/2d/3d, their transposes, depthwise and
// separable. Channels-first by default: activations N,C,spatial... and
// filters O,I,spatial... (OIW, OIHW, OIDHW). A channels-last data_format
// ("NWC", "NHWC", "NDHWC") switches activations to N,spatial...,C and
// filters to spatial...,I,O (TensorFlow's WIO, HWIO, DHWIO).
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "tapeflow/core/tensor.hpp"

namespace tapeflow::nn {

/**
 * "SAME" (TensorFlow's rule: output = ceil(in / stride), the extra pad
 * after), "VALID" (no padding), or explicit pads
 * {before_0, after_0, before_1, after_1, ...}, one pair per spatial axis.
 */
struct Padding {
  std::string mode = "VALID";
  std::vector<int64_t> explicit_pads;
  Padding(const char* m) : mode(m) {}
  Padding(std::string m) : mode(std::move(m)) {}
  Padding(std::initializer_list<int64_t> pads)
      : mode("EXPLICIT"), explicit_pads(pads) {}
  Padding(std::vector<int64_t> pads)
      : mode("EXPLICIT"), explicit_pads(std::move(pads)) {}
};

/**
 * strides and dilations: either one value, used for every spatial axis (as
 * TensorFlow's int), or exactly one value per spatial axis; empty means all
 * 1. Other lengths and non-positive values are a ValueError. data_format
 * "NCHW" (the default) means channels-first for every rank.
 */
struct ConvOptions {
  std::vector<int64_t> strides = {};
  Padding padding = "VALID";
  std::vector<int64_t> dilations = {};
  int64_t groups = 1;
  std::string data_format = "NCHW";
};

/** x (N, C, W), filter (O, C / groups, KW); "NWC": x (N, W, C), filter WIO. */
Tensor conv1d(const Tensor& x, const Tensor& filter,
              const ConvOptions& options = {});
/** x (N, C, H, W), filter (O, C / groups, KH, KW); "NHWC" with HWIO. */
Tensor conv2d(const Tensor& x, const Tensor& filter,
              const ConvOptions& options = {});
/** x (N, C, D, H, W), filter (O, C / groups, KD, KH, KW); "NDHWC", DHWIO. */
Tensor conv3d(const Tensor& x, const Tensor& filter,
              const ConvOptions& options = {});
/**
 * conv1d/2d/3d plus a bias (O,) per output channel, added in the same pass
 * (as PyTorch's F.conv2d(x, w, b)): cheaper than conv2d then bias_add.
 */
Tensor conv1d(const Tensor& x, const Tensor& filter, const Tensor& bias,
              const ConvOptions& options = {});
Tensor conv2d(const Tensor& x, const Tensor& filter, const Tensor& bias,
              const ConvOptions& options = {});
Tensor conv3d(const Tensor& x, const Tensor& filter, const Tensor& bias,
              const ConvOptions& options = {});
/**
 * relu(conv1d/2d/3d(x, filter, bias)) in one op: the rectifier is applied
 * where the convolution writes y (NaN stays NaN, as relu), not by a second
 * op over y into a second tensor; the Conv1D/2D/3D layers with activation
 * nn::relu call it. An undefined bias means none.
 */
Tensor conv1d_relu(const Tensor& x, const Tensor& filter, const Tensor& bias,
                   const ConvOptions& options = {});
Tensor conv2d_relu(const Tensor& x, const Tensor& filter, const Tensor& bias,
                   const ConvOptions& options = {});
Tensor conv3d_relu(const Tensor& x, const Tensor& filter, const Tensor& bias,
                   const ConvOptions& options = {});

/**
 * Options of convolution(), in TensorFlow 1's argument order. The
 * dilation_rate and strides lists take one value for every spatial axis or
 * one per axis (empty: all 1); data_format as ConvOptions'.
 */
struct ConvolutionOptions {
  Padding padding = "VALID";
  std::vector<int64_t> strides = {};
  std::vector<int64_t> dilation_rate = {};
  std::string data_format = "NCHW";
};

/**
 * TensorFlow's tf.nn.convolution: conv1d, conv2d or conv3d as x has 1, 2 or
 * 3 spatial axes (rank 3, 4 or 5); the filter has x's rank. Grouped when the
 * filter has fewer in-channels than x has channels (groups = their ratio).
 */
Tensor convolution(const Tensor& x, const Tensor& filter,
                   const ConvolutionOptions& options = {});

/**
 * Gradient of conv2d with respect to its input (TensorFlow semantics).
 * `filter` is the forward conv's (O, I, KH, KW) with O = x's channels (HWIO
 * for "NHWC", TF's (KH, KW, out, in)); `output_shape` is the full result
 * shape in the data format, and the forward conv of it must give x's shape.
 */
Tensor conv2d_transpose(const Tensor& x, const Tensor& filter,
                        const Shape& output_shape,
                        const ConvOptions& options = {});
/** As conv2d_transpose, for (N, C, D, H, W) / (O, I, KD, KH, KW). */
Tensor conv3d_transpose(const Tensor& x, const Tensor& filter,
                        const Shape& output_shape,
                        const ConvOptions& options = {});

/**
 * Per-channel conv2d with channel multiplier M (groups = C, `groups` in the
 * options is ignored). NCHW: filter (C * M, 1, KH, KW), output channel
 * c * M + m. NHWC: TensorFlow's filter (KH, KW, C, M).
 */
Tensor depthwise_conv2d(const Tensor& x, const Tensor& filter,
                        const ConvOptions& options = {});
/**
 * depthwise_conv2d (with the options' strides, padding and dilations), then
 * a 1x1 conv2d by `pointwise_filter`: (O, C * M, 1, 1), or TF's
 * (1, 1, C * M, O) for "NHWC".
 */
Tensor separable_conv2d(const Tensor& x, const Tensor& depthwise_filter,
                        const Tensor& pointwise_filter,
                        const ConvOptions& options = {});

}  // namespace tapeflow::nn
