// Convolutions: conv1d/2d/3d, conv2d/3d_transpose, depthwise_conv2d,
// separable_conv2d. Every public function validates its arguments, turns
// channels-last layouts into channels-first views (transposes are free) and
// applies Conv, ConvRelu or ConvGradInput; the gradient rules of the four ops
// follow.
#include "tapeflow/nn/conv.hpp"

#include <algorithm>

#include "core/checked.hpp"
#include "core/op_error.hpp"
#include "ops/apply.hpp"
#include "ops/composite.hpp"
#include "ops/elementwise_ops.hpp"
#include "ops/nn/conv_ops.hpp"
#include "ops/nn/layout.hpp"
#include "tapeflow/ops/math.hpp"
#include "tapeflow/ops/reduce.hpp"
#include "tapeflow/ops/shape.hpp"

namespace tapeflow {

Shape ConvAttrs::output_shape(const Shape& x, const Shape& filter) const {
  Shape out{x[0], filter[0]};
  for (int64_t i = 0; i < spatial(); ++i) {
    const int64_t extent = (filter[i + 2] - 1) * dilations[i] + 1;
    out.push_back(window_count(x[i + 2] + pads_before[i] + pads_after[i],
                               extent, strides[i]));
  }
  return out;
}

TensorSpec Conv::infer(Inputs in) const {
  return {attrs.output_shape(in[0].shape(), in[1].shape()), in[0].dtype()};
}

// y = conv(x, w) is bilinear: <dy, conv(x', w)> = <grad_input(dy, w), x'>
// and <dy, conv(x, w')> = <grad_filter(x, dy), w'>; a bias gets dy summed
// over everything but the channels.
// The filter gradient, computed last, takes x as the forward converted it
// and dy as the input gradient converted it.
namespace {

/** Conv's gradients for the gradient `dy` of its output. */
Grads conv_grads(const ConvAttrs& attrs, const VjpArgs& a, const Tensor& dy) {
  Grads g(a.input_specs.size());
  PayloadPtr dy_converted;
  if (a.needs(0)) {
    const ConvGradInput grad_input{attrs, a.input_shape(0)};
    if (a.needs(1)) {
      auto kept = apply_keeping(grad_input, {dy, a.x(1)});
      g[0] = kept.out;
      dy_converted = std::move(kept.payload);
    } else {
      g[0] = apply(grad_input, {dy, a.x(1)});
    }
  }
  if (a.needs(1))
    g[1] = apply(ConvGradFilter{attrs, a.input_shape(1), a.payload,
                                std::move(dy_converted)},
                 {a.x(0), dy});
  if (g.size() == 3 && a.needs(2)) {
    std::vector<int64_t> axes{0};
    for (int64_t i = 2; i < dy.rank(); ++i) axes.push_back(i);
    g[2] = sum(dy, axes);
  }
  return g;
}

}  // namespace

Grads Conv::vjp(const VjpArgs& a) const {
  return conv_grads(attrs, a, a.grad);
}

// relu's rule on y (the gradient where relu kept y, NaN included), then
// conv's.
Grads ConvRelu::vjp(const VjpArgs& a) const {
  return conv_grads(attrs, a, apply(ReluGrad{}, {a.output(), a.grad}));
}

// z = grad_input(g, w), cotangent v (x's shape):
// <v, z> = <conv(v, w), g> = <grad_filter(v, g), w>.
Grads ConvGradInput::vjp(const VjpArgs& a) const {
  return {a.needs(0) ? apply(Conv{attrs}, {a.grad, a.x(1)}) : Tensor(),
          a.needs(1)
              ? apply(ConvGradFilter{attrs, a.input_shape(1)}, {a.grad, a.x(0)})
              : Tensor()};
}

// z = grad_filter(x, g), cotangent v (the filter's shape):
// <v, z> = <g, conv(x, v)> = <grad_input(g, v), x>.
Grads ConvGradFilter::vjp(const VjpArgs& a) const {
  return {a.needs(0)
              ? apply(ConvGradInput{attrs, a.input_shape(0)}, {a.x(1), a.grad})
              : Tensor(),
          a.needs(1) ? apply(Conv{attrs}, {a.x(0), a.grad}) : Tensor()};
}

namespace nn {
namespace {

using layout::channels_last;
using layout::shape_to_channels_first;
using layout::shape_to_channels_last;
using layout::to_channels_first;
using layout::to_channels_last;

void check_rank(const char* op, const Tensor& t, int64_t rank,
                const char* what) {
  if (t.rank() != rank)
    throw op_error<ShapeError>(op, "expected ", what, " of rank ", rank,
                               ", got shape ", t.shape().str());
}

void check_float(const char* op, const Tensor& t, const char* what) {
  if (!is_floating(t.dtype()))
    throw op_error<DTypeError>(op, "expected ", what,
                               " of float32 or float64, got ",
                               dtype_name(t.dtype()));
}

/** (k..., I, O) -> (O, I, k...): a view. */
Tensor filter_to_oi(const Tensor& w) {
  std::vector<int64_t> perm{w.rank() - 1, w.rank() - 2};
  for (int64_t i = 0; i + 2 < w.rank(); ++i) perm.push_back(i);
  return transpose(w, perm);
}

/** Strides or dilations: none means 1 on every axis. */
Shape per_axis_or_ones(const char* op, const std::vector<int64_t>& v,
                       int64_t nsp, const char* what) {
  return v.empty() ? Shape(std::vector<int64_t>(nsp, 1))
                   : layout::per_axis(op, v, nsp, what);
}

/** Checked attributes for channels-first shapes of x and the filter. */
ConvAttrs resolve(const char* op, const Shape& x, const Shape& w,
                  const ConvOptions& o, int64_t groups) {
  const int64_t nsp = x.size() - 2;
  ConvAttrs a;
  a.strides = per_axis_or_ones(op, o.strides, nsp, "strides");
  a.dilations = per_axis_or_ones(op, o.dilations, nsp, "dilations");
  a.groups = groups;
  if (groups <= 0 || x[1] % groups != 0 || w[0] % groups != 0)
    throw op_error<ValueError>(op, "expected groups dividing input channels (",
                               x[1], ") and filter out-channels (", w[0],
                               "), got ", groups);
  if (x[1] != w[1] * groups)
    throw op_error<ShapeError>(op, "expected input channels ", x[1],
                               " = filter in-channels * groups, got ", w[1],
                               " * ", groups);
  const Padding& p = o.padding;
  for (int64_t i = 0; i < nsp; ++i) {
    const int64_t in = x[i + 2], s = a.strides[i];
    if (w[i + 2] < 1)
      throw op_error<ShapeError>(op, "expected a filter extent >= 1 along ",
                                 "spatial axis ", i, ", got ", w[i + 2]);
    const int64_t extent =
        checked_add(checked_mul(w[i + 2] - 1, a.dilations[i], op,
                                "the dilated filter extent"),
                    1, op, "the dilated filter extent");
    int64_t before = 0, after = 0;
    if (p.mode == "SAME") {
      const layout::AxisPads same = layout::same_padding(in, extent, s);
      before = same.lo;
      after = same.hi;
    } else if (p.mode == "EXPLICIT") {
      if (static_cast<int64_t>(p.explicit_pads.size()) != 2 * nsp)
        throw op_error<ShapeError>(op, "expected ", 2 * nsp,
                                   " explicit pads, got ",
                                   p.explicit_pads.size());
      before = p.explicit_pads[2 * i];
      after = p.explicit_pads[2 * i + 1];
      if (before < 0 || after < 0)
        throw op_error<ValueError>(op, "expected non-negative pads, got ",
                                   before, ", ", after);
    } else if (p.mode != "VALID") {
      throw op_error<ValueError>(
          op, "expected padding SAME, VALID or explicit pads, got ", p.mode);
    }
    const int64_t padded =
        checked_add(checked_add(in, before, op, "the padded input"), after, op,
                    "the padded input");
    // SAME over an empty axis has ceil(0 / s) = 0 outputs there, as in TF:
    // no window to fit (apply runs no kernel for the empty output).
    if (p.mode == "SAME" && in == 0) {
      a.pads_before.push_back(before);
      a.pads_after.push_back(after);
      continue;
    }
    if (extent > padded)
      throw op_error<ShapeError>(op, "expected a dilated filter extent <= ",
                                 "padded input along spatial axis ", i,
                                 ", got ", extent, " > ", padded);
    // A stride past the last window start gives one window, as any such
    // stride: backends see the smallest (oneDNN refuses 2^40).
    a.strides[i] = std::min(s, padded - extent + 1);
    a.pads_before.push_back(before);
    a.pads_after.push_back(after);
  }
  return a;
}

/** Whether a convolution's output goes through relu in the same op. */
enum class Rectified : bool { no, yes };

/** Channels-first x and filter (and bias, if defined), already checked. */
Tensor run_conv(const char* op, const Tensor& x, const Tensor& w,
                const ConvOptions& o, int64_t groups,
                const Tensor& bias = Tensor(),
                Rectified rectified = Rectified::no) {
  const ConvAttrs attrs = resolve(op, x.shape(), w.shape(), o, groups);
  // Qualified: std::apply would take an initializer_list by ADL.
  const auto conv = [&](std::initializer_list<Tensor> in) {
    return rectified == Rectified::yes ? tapeflow::apply(ConvRelu{attrs}, in)
                                       : tapeflow::apply(Conv{attrs}, in);
  };
  auto [xp, wp] = promote_pair(x, w, op);
  if (bias.defined()) {
    if (bias.rank() != 1 || bias.shape()[0] != w.shape()[0])
      throw op_error<ShapeError>(op, "expected a bias of shape (", w.shape()[0],
                                 "), got ", bias.shape().str());
    check_float(op, bias, "bias");
  }
  return composite(op, [&] {
    if (!bias.defined()) return conv({xp, wp});
    const Tensor b = bias.dtype() == xp.dtype() ? bias : cast(bias, xp.dtype());
    return conv({xp, wp, b});
  });
}

Tensor conv_nd(const char* op, int64_t nsp, const Tensor& x,
               const Tensor& filter, const ConvOptions& o,
               const Tensor& bias = Tensor(),
               Rectified rectified = Rectified::no) {
  check_rank(op, x, nsp + 2, "x");
  check_rank(op, filter, nsp + 2, "filter");
  check_float(op, x, "x");
  check_float(op, filter, "filter");
  const bool last = channels_last(op, nsp, o.data_format);
  if (!last) return run_conv(op, x, filter, o, o.groups, bias, rectified);
  return to_channels_last(run_conv(op, to_channels_first(x),
                                   filter_to_oi(filter), o, o.groups, bias,
                                   rectified));
}

Tensor conv_transpose_nd(const char* op, int64_t nsp, const Tensor& x,
                         const Tensor& filter, const Shape& output_shape,
                         const ConvOptions& o) {
  check_rank(op, x, nsp + 2, "x");
  check_rank(op, filter, nsp + 2, "filter");
  if (output_shape.size() != nsp + 2)
    throw op_error<ShapeError>(op, "expected output_shape of rank ", nsp + 2,
                               ", got ", output_shape.str());
  check_float(op, x, "x");
  check_float(op, filter, "filter");
  const bool last = channels_last(op, nsp, o.data_format);
  const Tensor xc = last ? to_channels_first(x) : x;
  const Tensor wc = last ? filter_to_oi(filter) : filter;
  const Shape out = last ? shape_to_channels_first(output_shape) : output_shape;
  const ConvAttrs attrs = resolve(op, out, wc.shape(), o, o.groups);
  const Shape forward = attrs.output_shape(out, wc.shape());
  if (!(forward == xc.shape()))
    throw op_error<ShapeError>(
        op, "expected x of shape ",
        (last ? shape_to_channels_last(forward) : forward).str(),
        " for output_shape ", output_shape.str(), ", got ", x.shape().str());
  auto [xp, wp] = promote_pair(xc, wc, op);
  const Tensor y = apply(ConvGradInput{attrs, out}, {xp, wp});
  return last ? to_channels_last(y) : y;
}

/** The depthwise filter as OIHW (C * M, 1, KH, KW). */
Tensor depthwise_filter(const char* op, int64_t channels, const Tensor& f,
                        bool last) {
  const Shape& s = f.shape();
  // groups = channels: like PyTorch, no groups at all is refused.
  if (channels == 0)
    throw op_error<ShapeError>(op, "expected x with at least 1 channel, got 0");
  if (last) {
    if (s[2] != channels)
      throw op_error<ShapeError>(op, "expected filter (KH, KW, ", channels,
                                 ", M), got ", s.str());
    return filter_to_oi(reshape(f, {s[0], s[1], 1, s[2] * s[3]}));
  }
  if (s[1] != 1 || s[0] % channels != 0)
    throw op_error<ShapeError>(op, "expected filter (", channels,
                               " * M, 1, KH, KW), got ", s.str());
  return f;
}

}  // namespace

Tensor conv1d(const Tensor& x, const Tensor& filter, const ConvOptions& o) {
  return conv_nd("conv1d", 1, x, filter, o);
}
Tensor conv2d(const Tensor& x, const Tensor& filter, const ConvOptions& o) {
  return conv_nd("conv2d", 2, x, filter, o);
}
Tensor conv3d(const Tensor& x, const Tensor& filter, const ConvOptions& o) {
  return conv_nd("conv3d", 3, x, filter, o);
}
Tensor conv1d(const Tensor& x, const Tensor& filter, const Tensor& bias,
              const ConvOptions& o) {
  return conv_nd("conv1d", 1, x, filter, o, bias);
}
Tensor conv2d(const Tensor& x, const Tensor& filter, const Tensor& bias,
              const ConvOptions& o) {
  return conv_nd("conv2d", 2, x, filter, o, bias);
}
Tensor conv3d(const Tensor& x, const Tensor& filter, const Tensor& bias,
              const ConvOptions& o) {
  return conv_nd("conv3d", 3, x, filter, o, bias);
}
Tensor conv1d_relu(const Tensor& x, const Tensor& filter, const Tensor& bias,
                   const ConvOptions& o) {
  return conv_nd("conv1d_relu", 1, x, filter, o, bias, Rectified::yes);
}
Tensor conv2d_relu(const Tensor& x, const Tensor& filter, const Tensor& bias,
                   const ConvOptions& o) {
  return conv_nd("conv2d_relu", 2, x, filter, o, bias, Rectified::yes);
}
Tensor conv3d_relu(const Tensor& x, const Tensor& filter, const Tensor& bias,
                   const ConvOptions& o) {
  return conv_nd("conv3d_relu", 3, x, filter, o, bias, Rectified::yes);
}

Tensor conv2d_transpose(const Tensor& x, const Tensor& filter,
                        const Shape& output_shape, const ConvOptions& o) {
  return conv_transpose_nd("conv2d_transpose", 2, x, filter, output_shape, o);
}
Tensor conv3d_transpose(const Tensor& x, const Tensor& filter,
                        const Shape& output_shape, const ConvOptions& o) {
  return conv_transpose_nd("conv3d_transpose", 3, x, filter, output_shape, o);
}

Tensor depthwise_conv2d(const Tensor& x, const Tensor& filter,
                        const ConvOptions& o) {
  const char* op = "depthwise_conv2d";
  check_rank(op, x, 4, "x");
  check_rank(op, filter, 4, "filter");
  check_float(op, x, "x");
  check_float(op, filter, "filter");
  const bool last = channels_last(op, 2, o.data_format);
  const Tensor xc = last ? to_channels_first(x) : x;
  const int64_t c = xc.shape()[1];
  const Tensor y =
      run_conv(op, xc, depthwise_filter(op, c, filter, last), o, c);
  return last ? to_channels_last(y) : y;
}

Tensor separable_conv2d(const Tensor& x, const Tensor& depthwise_filter,
                        const Tensor& pointwise_filter, const ConvOptions& o) {
  const char* op = "separable_conv2d";
  check_rank(op, x, 4, "x");
  check_rank(op, depthwise_filter, 4, "depthwise_filter");
  check_rank(op, pointwise_filter, 4, "pointwise_filter");
  check_float(op, pointwise_filter, "pointwise_filter");
  const bool last = channels_last(op, 2, o.data_format);
  const Shape& d = depthwise_filter.shape();
  const Shape& p = pointwise_filter.shape();
  const int64_t mid = last ? d[2] * d[3] : d[0];
  const int64_t p_in = last ? p[2] : p[1];
  const bool one_by_one =
      last ? p[0] == 1 && p[1] == 1 : p[2] == 1 && p[3] == 1;
  if (!one_by_one || p_in != mid)
    throw op_error<ShapeError>(op, "expected a 1x1 pointwise filter with ", mid,
                               " in-channels, got ", p.str());
  ConvOptions pointwise;
  pointwise.data_format = o.data_format;
  return composite(op, [&] {
    return conv2d(depthwise_conv2d(x, depthwise_filter, o), pointwise_filter,
                  pointwise);
  });
}

}  // namespace nn
}  // namespace tapeflow
