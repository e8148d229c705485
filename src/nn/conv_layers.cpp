// Convolution layers over nn::conv1d/2d/3d (conv1d/2d/3d_relu for activation
// relu) and their transposed, depthwise and separable forms. Kernels are kept
// in the layout the function takes for the layer's data_format: (O, I, k...)
// channels-first, (k..., I, O) last.
#include "core/checked.hpp"
#include "core/op_error.hpp"
#include "tapeflow/nn/activations.hpp"
#include "tapeflow/nn/layers/conv.hpp"
#include "tapeflow/ops/math.hpp"

namespace tapeflow::nn {
namespace {

bool channels_last(const std::string& data_format) {
  return data_format.size() > 2 && data_format.back() == 'C';
}

/** Whether `f` is relu itself (nn::relu or tapeflow::relu, not a wrapper). */
bool is_relu(const Activation& f) {
  using Fn = Tensor (*)(const Tensor&);
  const Fn* fn = f.target<Fn>();
  return fn && (*fn == &nn::relu || *fn == &tapeflow::relu);
}

int64_t product(const std::string& layer, const std::vector<int64_t>& v) {
  int64_t p = 1;
  for (int64_t d : v) p = checked_mul(p, d, layer, "the kernel's size");
  return p;
}

/** (O, I, k...) or (k..., I, O). */
Shape kernel_shape(const std::vector<int64_t>& k, int64_t out, int64_t in,
                   bool last) {
  Shape s;
  if (!last) {
    s.push_back(out);
    s.push_back(in);
  }
  for (int64_t d : k) s.push_back(d);
  if (last) {
    s.push_back(in);
    s.push_back(out);
  }
  return s;
}

/** NCHW (C * M, 1, kh, kw); NHWC TensorFlow's (kh, kw, C, M). */
Shape depthwise_shape(const std::vector<int64_t>& k, int64_t c, int64_t m,
                      bool last) {
  return last ? Shape{k[0], k[1], c, m} : Shape{c * m, 1, k[0], k[1]};
}

void check_at_least_one(const std::string& layer, const char* what,
                        int64_t value) {
  if (value < 1)
    throw op_error<ValueError>(layer, "expected ", what, " >= 1, got ", value);
}

/** C * depth_multiplier, the depthwise convolution's output channels. */
int64_t depthwise_channels(const std::string& layer, int64_t c, int64_t m) {
  return checked_mul(c, m, layer, "channels * depth_multiplier");
}

void check_rank4(const std::string& layer, const Shape& input_shape) {
  if (input_shape.size() != 4)
    throw op_error<ShapeError>(layer, "expected inputs of rank 4, got ",
                               input_shape.str());
}

std::string layer_type(int spatial) {
  return "conv" + std::to_string(spatial) + "d";
}

}  // namespace

ConvND::ConvND(int spatial, int64_t filters, std::vector<int64_t> kernel_size,
               ConvLayerOptions options)
    : ConvND(layer_type(spatial), spatial, filters, std::move(kernel_size),
             std::move(options)) {}

ConvND::ConvND(std::string type, int spatial, int64_t filters,
               std::vector<int64_t> kernel_size, ConvLayerOptions options)
    : Module(std::move(type), options.name),
      spatial_(spatial),
      filters_(filters),
      kernel_size_(std::move(kernel_size)),
      options_(std::move(options)) {
  if (kernel_size_.size() == 1 && spatial > 1)
    kernel_size_.assign(spatial, kernel_size_[0]);
  if (static_cast<int>(kernel_size_.size()) != spatial)
    throw op_error<ValueError>(name(), "expected a kernel size of ", spatial,
                               " extents, got ", kernel_size_.size());
  for (size_t i = 0; i < kernel_size_.size(); ++i)
    if (kernel_size_[i] < 1)
      throw op_error<ValueError>(name(), "expected kernel extents >= 1, got ",
                                 kernel_size_[i], " along spatial axis ", i);
  check_at_least_one(name(), "filters", filters_);
  check_at_least_one(name(), "groups", options_.groups);
}

int64_t ConvND::channel_axis(int64_t rank) const {
  return channels_last(options_.data_format) ? rank - 1 : 1;
}

ConvOptions ConvND::conv_options() const {
  return {options_.strides, options_.padding, options_.dilations,
          options_.groups, options_.data_format};
}

void ConvND::build(const Shape& input_shape) {
  if (input_shape.size() != spatial_ + 2)
    throw op_error<ShapeError>(name(), "expected inputs of rank ", spatial_ + 2,
                               ", got ", input_shape.str());
  const int64_t in =
      input_shape[channel_axis(input_shape.size())] / options_.groups;
  const int64_t k = product(name(), kernel_size_);
  const bool last = channels_last(options_.data_format);
  const int64_t fan_in = checked_mul(in, k, name(), "the kernel's fan-in");
  const int64_t fan_out =
      checked_mul(filters_, k, name(), "the kernel's fan-out");
  kernel_ =
      add_weight("kernel", options_.kernel_initializer(
                               kernel_shape(kernel_size_, filters_, in, last),
                               fan_in, fan_out, float32));
  if (options_.use_bias)
    bias_ = add_weight("bias", options_.bias_initializer({filters_}, fan_in,
                                                         fan_out, float32));
}

namespace {
Tensor finish(const Tensor& y, const Variable& bias,
              const ConvLayerOptions& o) {
  Tensor out = y;
  if (bias.defined())
    out = bias_add(out, bias, channels_last(o.data_format) ? "NHWC" : "NCHW");
  return o.activation ? o.activation(out) : out;
}
}  // namespace

Tensor ConvND::forward(const Tensor& x) {
  const ConvOptions o = conv_options();
  // The bias goes into the convolution itself, and so does relu: a pass
  // over y fewer each.
  const Tensor& b = bias_;
  if (is_relu(options_.activation))
    return spatial_ == 1   ? conv1d_relu(x, kernel_, b, o)
           : spatial_ == 2 ? conv2d_relu(x, kernel_, b, o)
                           : conv3d_relu(x, kernel_, b, o);
  const Tensor y = spatial_ == 1   ? conv1d(x, kernel_, b, o)
                   : spatial_ == 2 ? conv2d(x, kernel_, b, o)
                                   : conv3d(x, kernel_, b, o);
  return options_.activation ? options_.activation(y) : y;
}

Conv2DTranspose::Conv2DTranspose(int64_t filters,
                                 std::vector<int64_t> kernel_size,
                                 ConvLayerOptions options)
    : ConvND("conv2d_transpose", 2, filters, std::move(kernel_size),
             std::move(options)) {}

void Conv2DTranspose::build(const Shape& input_shape) {
  check_rank4(name(), input_shape);
  const int64_t in = input_shape[channel_axis(4)];
  const int64_t k = product(name(), kernel_size_);
  const int64_t fan_in =
      checked_mul(filters_, k, name(), "the kernel's fan-in");
  const int64_t fan_out = checked_mul(in, k, name(), "the kernel's fan-out");
  // The forward conv this transposes maps filters_ channels to `in`.
  kernel_ = add_weight("kernel",
                       options_.kernel_initializer(
                           kernel_shape(kernel_size_, in, filters_,
                                        channels_last(options_.data_format)),
                           fan_in, fan_out, float32));
  if (options_.use_bias)
    bias_ = add_weight("bias", options_.bias_initializer({filters_}, fan_in,
                                                         fan_out, float32));
}

Tensor Conv2DTranspose::forward(const Tensor& x) {
  const bool last = channels_last(options_.data_format);
  const int64_t h_axis = last ? 1 : 2;
  Shape out = x.shape();
  out[last ? 3 : 1] = filters_;
  for (int i = 0; i < 2; ++i) {
    const int64_t s = options_.strides.empty()       ? 1
                      : options_.strides.size() == 1 ? options_.strides[0]
                                                     : options_.strides[i];
    const int64_t d = options_.dilations.empty()       ? 1
                      : options_.dilations.size() == 1 ? options_.dilations[0]
                                                       : options_.dilations[i];
    const int64_t in = x.shape()[h_axis + i];
    // Keras' deconv_output_length: in * s, plus with VALID what the dilated
    // kernel reaches past the last stride (a kernel shorter than the stride
    // still fills each stride: in * s, not (in - 1) * s + k).
    const std::string& op = name();
    const int64_t dilated = checked_add(
        checked_mul(kernel_size_[i] - 1, d, op, "the dilated kernel"), 1, op,
        "the dilated kernel");
    const int64_t filled = checked_mul(in, s, op, "the output extent");
    out[h_axis + i] =
        options_.padding.mode == "SAME"
            ? filled
            : checked_add(filled, std::max<int64_t>(dilated - s, 0), op,
                          "the output extent");
  }
  return finish(conv2d_transpose(x, kernel_, out, conv_options()), bias_,
                options_);
}

DepthwiseConv2D::DepthwiseConv2D(std::vector<int64_t> kernel_size,
                                 int64_t depth_multiplier,
                                 ConvLayerOptions options)
    // filters: unused; the output has C * depth_multiplier channels.
    : ConvND("depthwise_conv2d", 2, 1, std::move(kernel_size),
             std::move(options)),
      multiplier_(depth_multiplier) {
  check_at_least_one(name(), "depth_multiplier", multiplier_);
}

void DepthwiseConv2D::build(const Shape& input_shape) {
  check_rank4(name(), input_shape);
  const int64_t c = input_shape[channel_axis(4)];
  const int64_t k = product(name(), kernel_size_);
  const int64_t out = depthwise_channels(name(), c, multiplier_);
  const int64_t fan_out =
      checked_mul(k, multiplier_, name(), "the kernel's fan-out");
  const Shape shape = depthwise_shape(kernel_size_, c, multiplier_,
                                      channels_last(options_.data_format));
  kernel_ = add_weight("depthwise_kernel",
                       options_.kernel_initializer(shape, k, fan_out, float32));
  if (options_.use_bias)
    bias_ = add_weight("bias",
                       options_.bias_initializer({out}, k, fan_out, float32));
}

Tensor DepthwiseConv2D::forward(const Tensor& x) {
  return finish(depthwise_conv2d(x, kernel_, conv_options()), bias_, options_);
}

SeparableConv2D::SeparableConv2D(int64_t filters,
                                 std::vector<int64_t> kernel_size,
                                 int64_t depth_multiplier,
                                 ConvLayerOptions options)
    : ConvND("separable_conv2d", 2, filters, std::move(kernel_size),
             std::move(options)),
      multiplier_(depth_multiplier) {
  check_at_least_one(name(), "depth_multiplier", multiplier_);
}

void SeparableConv2D::build(const Shape& input_shape) {
  check_rank4(name(), input_shape);
  const int64_t c = input_shape[channel_axis(4)];
  const int64_t k = product(name(), kernel_size_);
  const bool last = channels_last(options_.data_format);
  const int64_t middle = depthwise_channels(name(), c, multiplier_);
  const Shape depthwise = depthwise_shape(kernel_size_, c, multiplier_, last);
  const Shape pointwise =
      last ? Shape{1, 1, middle, filters_} : Shape{filters_, middle, 1, 1};
  kernel_ = add_weight(
      "depthwise_kernel",
      options_.kernel_initializer(
          depthwise, k,
          checked_mul(k, multiplier_, name(), "the kernel's fan-out"),
          float32));
  pointwise_ = add_weight(
      "pointwise_kernel",
      options_.kernel_initializer(pointwise, middle, filters_, float32));
  if (options_.use_bias)
    bias_ = add_weight("bias", options_.bias_initializer({filters_}, middle,
                                                         filters_, float32));
}

Tensor SeparableConv2D::forward(const Tensor& x) {
  return finish(separable_conv2d(x, kernel_, pointwise_, conv_options()), bias_,
                options_);
}

}  // namespace tapeflow::nn
