// tf.nn.pool: the pooling op of x's spatial rank, or, with a dilation rate,
// windows gathered along each axis (the pooling kernels have no dilation);
// SAME pads with zeros there, as TF's space_to_batch does.
#include <algorithm>

#include "core/checked.hpp"
#include "core/op_error.hpp"
#include "ops/composite.hpp"
#include "ops/nn/layout.hpp"
#include "ops/nn/window_reduce.hpp"
#include "tapeflow/nn/pooling.hpp"
#include "tapeflow/ops/shape.hpp"

namespace tapeflow::nn {
namespace {

/** One list entry per spatial axis; none means 1 on every axis. */
Shape per_axis_or_ones(const char* op, const std::vector<int64_t>& v,
                       int64_t nsp, const char* what) {
  return v.empty() ? Shape(std::vector<int64_t>(nsp, 1))
                   : layout::per_axis(op, v, nsp, what);
}

/** Stride-1 pooling of channels-first x with windows dilated by `rate`. */
Tensor dilated_pool(const char* op, Tensor x, const Shape& window,
                    const Shape& rate, const std::string& padding, bool max) {
  // Innermost axis first: the first maximum of each row, then the first row
  // holding the maximum, is the window's first maximum in row-major order
  // (TF's max-pool gradient on ties).
  for (int64_t i = window.size() - 1; i >= 0; --i) {
    const int64_t axis = i + 2, in = x.shape()[axis];
    const int64_t extent = checked_add(
        checked_mul(window[i] - 1, rate[i], op, "the dilated window"), 1, op,
        "the dilated window");
    window::Dilated w{.outputs = in - extent + 1,
                      .size = window[i],
                      .rate = rate[i],
                      .offset = 0};
    if (padding == "SAME") {
      // SAME keeps the extent: an empty axis stays empty (no window to take).
      if (in == 0) continue;
      w.outputs = in;
      w.offset = (extent - 1) / 2;
    } else if (in < extent) {
      throw op_error<ShapeError>(
          op, "expected a dilated window no larger than the input with VALID ",
          "padding, got extent ", extent, " along spatial axis ", i,
          " of shape ", x.shape().str());
    }
    x = window::reduce(x, axis, w, max);
  }
  return x;
}

}  // namespace

Tensor pool(const Tensor& x, const PoolingOptions& o) {
  const char* op = "pool";
  const int64_t nsp = layout::spatial_axes(op, x);
  if (o.pooling_type != "MAX" && o.pooling_type != "AVG")
    throw op_error<ValueError>(op, "expected pooling_type \"MAX\" or \"AVG\", ",
                               "got \"", o.pooling_type, "\"");
  const bool max = o.pooling_type == "MAX";
  const Shape window =
      layout::per_axis(op, o.window_shape, nsp, "window_shape");
  const Shape strides = per_axis_or_ones(op, o.strides, nsp, "strides");
  const Shape rate =
      per_axis_or_ones(op, o.dilation_rate, nsp, "dilation_rate");
  const bool dilated =
      std::any_of(rate.begin(), rate.end(), [](int64_t r) { return r > 1; });
  if (!dilated) {
    const PoolOptions p{.ksize = window.to_vector(),
                        .strides = strides.to_vector(),
                        .padding = o.padding,
                        .data_format = o.data_format};
    static constexpr Tensor (*maxes[])(const Tensor&, const PoolOptions&) = {
        max_pool1d, max_pool2d, max_pool3d};
    static constexpr Tensor (*avgs[])(const Tensor&, const PoolOptions&) = {
        avg_pool1d, avg_pool2d, avg_pool3d};
    return composite(op, [&] { return (max ? maxes : avgs)[nsp - 1](x, p); });
  }
  if (std::any_of(strides.begin(), strides.end(),
                  [](int64_t s) { return s != 1; }))
    throw op_error<ValueError>(op,
                               "expected strides of 1 with a dilation_rate "
                               "above 1 (as TensorFlow), got strides ",
                               strides.str(), " and dilation_rate ",
                               rate.str());
  if (!is_floating(x.dtype()))
    throw op_error<DTypeError>(op, "expected float32 or float64, got ",
                               dtype_name(x.dtype()));
  if (o.padding != "VALID" && o.padding != "SAME")
    throw op_error<ValueError>(
        op, "expected padding \"VALID\" or \"SAME\", got \"", o.padding, "\"");
  const bool last = layout::channels_last(op, nsp, o.data_format);
  const Tensor y = composite(op, [&] {
    return dilated_pool(op, last ? layout::to_channels_first(x) : x, window,
                        rate, o.padding, max);
  });
  return last ? layout::to_channels_last(y) : y;
}

}  // namespace tapeflow::nn
