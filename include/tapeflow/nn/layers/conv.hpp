#pragma once
#include <functional>
#include <string>
#include <vector>

#include "tapeflow/nn/conv.hpp"
#include "tapeflow/nn/initializers.hpp"
#include "tapeflow/nn/layers/dense.hpp"
#include "tapeflow/nn/module.hpp"

namespace tapeflow::nn {

/** Options shared by the convolution layers; layouts as in nn::conv2d. */
struct ConvLayerOptions {
  std::vector<int64_t> strides = {};
  Padding padding = "VALID";
  std::vector<int64_t> dilations = {};
  int64_t groups = 1;
  std::string data_format = "NCHW";
  Activation activation = {};
  bool use_bias = true;
  Initializer kernel_initializer = glorot_uniform();
  Initializer bias_initializer = zeros_initializer();
  std::string name = "";
};

/**
 * Conv1D / Conv2D / Conv3D: `filters` output channels, kernel
 * (filters, in / groups, k...) in OI... order, bias (filters,).
 */
class ConvND : public Module {
 public:
  ConvND(int spatial, int64_t filters, std::vector<int64_t> kernel_size,
         ConvLayerOptions options);
  Tensor forward(const Tensor& x) override;
  const Variable& kernel() const { return kernel_; }
  const Variable& bias() const { return bias_; }

 protected:
  /** A layer of its own type ("depthwise_conv2d", ...) over the same core. */
  ConvND(std::string type, int spatial, int64_t filters,
         std::vector<int64_t> kernel_size, ConvLayerOptions options);
  void build(const Shape& input_shape) override;
  int64_t channel_axis(int64_t rank) const;
  ConvOptions conv_options() const;

  int spatial_;
  int64_t filters_;
  std::vector<int64_t> kernel_size_;
  ConvLayerOptions options_;
  Variable kernel_, bias_;
};

class Conv1D : public ConvND {
 public:
  Conv1D(int64_t filters, int64_t kernel_size, ConvLayerOptions options = {})
      : ConvND(1, filters, {kernel_size}, std::move(options)) {}
};
class Conv2D : public ConvND {
 public:
  Conv2D(int64_t filters, std::vector<int64_t> kernel_size,
         ConvLayerOptions options = {})
      : ConvND(2, filters, std::move(kernel_size), std::move(options)) {}
};
class Conv3D : public ConvND {
 public:
  Conv3D(int64_t filters, std::vector<int64_t> kernel_size,
         ConvLayerOptions options = {})
      : ConvND(3, filters, std::move(kernel_size), std::move(options)) {}
};

/**
 * The transpose (gradient) of Conv2D: output size in * stride for "SAME",
 * in * stride + max(dilated kernel - stride, 0) for "VALID" (Keras'
 * deconv_output_length); kernel (in, filters, kh, kw).
 */
class Conv2DTranspose : public ConvND {
 public:
  Conv2DTranspose(int64_t filters, std::vector<int64_t> kernel_size,
                  ConvLayerOptions options = {});
  Tensor forward(const Tensor& x) override;

 protected:
  void build(const Shape& input_shape) override;
};

/** Per-channel conv with `depth_multiplier`; kernel (C * M, 1, kh, kw). */
class DepthwiseConv2D : public ConvND {
 public:
  DepthwiseConv2D(std::vector<int64_t> kernel_size,
                  int64_t depth_multiplier = 1, ConvLayerOptions options = {});
  Tensor forward(const Tensor& x) override;

 protected:
  void build(const Shape& input_shape) override;

 private:
  int64_t multiplier_;
};

/** Depthwise then 1x1 pointwise conv to `filters` channels. */
class SeparableConv2D : public ConvND {
 public:
  SeparableConv2D(int64_t filters, std::vector<int64_t> kernel_size,
                  int64_t depth_multiplier = 1, ConvLayerOptions options = {});
  Tensor forward(const Tensor& x) override;
  const Variable& pointwise_kernel() const { return pointwise_; }

 protected:
  void build(const Shape& input_shape) override;

 private:
  int64_t multiplier_;
  Variable pointwise_;
};

}  // namespace tapeflow::nn
