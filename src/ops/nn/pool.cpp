// Pooling: option checks, layouts, public functions and gradient rules.
#include <algorithm>
#include <string>

#include "core/checked.hpp"
#include "core/op_error.hpp"
#include "ops/apply.hpp"
#include "ops/nn/layout.hpp"
#include "ops/nn/pool_ops.hpp"
#include "tapeflow/creation.hpp"
#include "tapeflow/nn/pooling.hpp"
#include "tapeflow/ops/math.hpp"
#include "tapeflow/ops/shape.hpp"

namespace tapeflow {

Shape PoolWindow::output_shape(const Shape& in) const {
  Shape out{in[0], in[1]};
  for (int64_t i = 0; i < ksize.size(); ++i) {
    // in - k + lo + hi in this order: in + lo + hi passes INT64_MAX for a
    // SAME window of 2^63 - 1 taps (count_include_pad keeps its padding).
    const int64_t span = in[i + 2] - ksize[i] + pad_lo[i] + pad_hi[i];
    out.push_back(span < 0 ? 0 : span / strides[i] + 1);
  }
  return out;
}

PoolGeometry PoolWindow::geometry(const Shape& in) const {
  PoolGeometry g;
  const int64_t nd = ksize.size(), off = 3 - nd;
  const Shape out = output_shape(in);
  g.planes = in[0] * in[1];
  for (int64_t i = 0; i < nd; ++i) {
    g.in[off + i] = in[2 + i];
    g.out[off + i] = out[2 + i];
    g.k[off + i] = ksize[i];
    g.s[off + i] = strides[i];
    g.lo[off + i] = pad_lo[i];
    g.hi[off + i] = pad_hi[i];
  }
  return g;
}

namespace {

/**
 * One axis's window made as small as pools the same, so that the cost grows
 * with the data and not with the window (2^30 wide over 4 elements) or the
 * stride. Max pooling, and average pooling without padding in the count, see
 * only the input part of each window: padding no window starts inside
 * shrinks away, and a window reaching past the input end stops there. A
 * stride past the last window start gives one output, as any such stride.
 * `in - k + lo + hi` is (outputs - 1) * stride up to rounding, and stays so.
 */
void clamp_to_data(int64_t in, bool clamp_window, int64_t& k, int64_t& stride,
                   int64_t& lo, int64_t& hi) {
  const int64_t span = in - k + lo + hi;
  if (in == 0 || span < 0) return;  // no window holds an element
  if (clamp_window) {
    // Padding past the last window start: without it, the windows that
    // started before the input still do (or at its first element).
    const int64_t new_lo = std::min(lo, span / stride * stride);
    // The windows keep their ends, cut at the input's end.
    const int64_t new_k = std::min(k - (lo - new_lo), in + new_lo);
    hi = span - in + new_k - new_lo;
    k = new_k;
    lo = new_lo;
  }
  stride = std::min(stride, span + 1);
}

/** x as (N, C, spatial...) and the window, after every option check. */
struct Prepared {
  Tensor x;
  PoolWindow w;
  bool channels_last = false;
};

Prepared prepare(const Tensor& x, const nn::PoolOptions& o, int64_t nd,
                 const std::string& op, bool clamp_window) {
  if (!is_floating(x.dtype()))
    throw op_error<DTypeError>(op, "expected float32 or float64, got ",
                               dtype_name(x.dtype()));
  if (x.rank() != nd + 2)
    throw op_error<ShapeError>(op, "expected an input of rank ", nd + 2,
                               ", got ", x.shape().str());
  Prepared p;
  p.w.ksize = layout::per_axis(op, o.ksize, nd, "ksize");
  p.w.strides = o.strides.empty()
                    ? p.w.ksize
                    : layout::per_axis(op, o.strides, nd, "strides");
  if (o.padding != "VALID" && o.padding != "SAME")
    throw op_error<ValueError>(
        op, "expected padding \"VALID\" or \"SAME\", got \"", o.padding, "\"");
  p.channels_last = layout::channels_last(op, nd, o.data_format);
  p.x = p.channels_last ? layout::to_channels_first(x) : x;
  for (int64_t i = 0; i < nd; ++i) {
    const int64_t in = p.x.shape()[i + 2], k = p.w.ksize[i], s = p.w.strides[i];
    layout::AxisPads pads;
    if (o.padding == "SAME") {
      pads = layout::same_padding(in, k, s);
    } else if (in < k) {
      throw op_error<ShapeError>(
          op,
          "expected a window no larger than the input with "
          "VALID padding, got ksize ",
          p.w.ksize.str(), " for spatial extents of ", x.shape().str());
    }
    clamp_to_data(in, clamp_window, p.w.ksize[i], p.w.strides[i], pads.lo,
                  pads.hi);
    p.w.pad_lo.push_back(pads.lo);
    p.w.pad_hi.push_back(pads.hi);
  }
  return p;
}

/** (N, C, spatial...) back to the caller's layout. */
Tensor restore(const Tensor& y, bool channels_last) {
  return channels_last ? layout::to_channels_last(y) : y;
}

Tensor max_pool(const Tensor& x, const nn::PoolOptions& o, int64_t nd,
                const char* op) {
  const Prepared p = prepare(x, o, nd, op, true);
  // Only a recorded max pool has a gradient to route by the workspace.
  const MaxPool pool{p.w, autograd::g_recording_tapes != 0};
  return restore(apply(pool, {p.x})[0], p.channels_last);
}
Tensor avg_pool(const Tensor& x, const nn::PoolOptions& o, int64_t nd,
                const char* op) {
  // Counting the padding, the window's size is the divisor: keep it.
  const Prepared p = prepare(x, o, nd, op, !o.count_include_pad);
  return restore(apply(AvgPool{p.w, o.count_include_pad}, {p.x}),
                 p.channels_last);
}

}  // namespace

namespace nn {
Tensor max_pool1d(const Tensor& x, const PoolOptions& o) {
  return max_pool(x, o, 1, "max_pool1d");
}
Tensor max_pool2d(const Tensor& x, const PoolOptions& o) {
  return max_pool(x, o, 2, "max_pool2d");
}
Tensor max_pool3d(const Tensor& x, const PoolOptions& o) {
  return max_pool(x, o, 3, "max_pool3d");
}
Tensor avg_pool1d(const Tensor& x, const PoolOptions& o) {
  return avg_pool(x, o, 1, "avg_pool1d");
}
Tensor avg_pool2d(const Tensor& x, const PoolOptions& o) {
  return avg_pool(x, o, 2, "avg_pool2d");
}
Tensor avg_pool3d(const Tensor& x, const PoolOptions& o) {
  return avg_pool(x, o, 3, "avg_pool3d");
}

PoolWithArgmax max_pool2d_with_argmax(const Tensor& x, const PoolOptions& o,
                                      bool include_batch_in_index) {
  const Prepared p = prepare(x, o, 2, "max_pool2d_with_argmax", true);
  // One pass: the indices come from the workspace, not from x again.
  const auto [y, workspace] = apply(MaxPool{p.w, true}, {p.x});
  const Tensor idx = apply(
      MaxPoolArgmax{p.w, p.x.shape(), include_batch_in_index}, {workspace});
  return {restore(y, p.channels_last), restore(idx, p.channels_last)};
}
}  // namespace nn

Grads MaxPool::vjp(const VjpArgs& a) const {
  if (!with_workspace)
    throw ValueError(
        "[max_pool] expected the workspace of a recorded max pool, got a max "
        "pool applied while nothing recorded");
  return {apply(MaxPoolScatter{w, a.input_shape(0)}, {a.grad, a.output(1)})};
}
Grads AvgPool::vjp(const VjpArgs& a) const {
  return {apply(AvgPoolGrad{w, count_include_pad, a.input_shape(0)}, {a.grad})};
}
Grads AvgPoolGrad::vjp(const VjpArgs& a) const {
  return {apply(AvgPool{w, count_include_pad}, {a.grad})};
}
// Scatter and gather are linear in their first input and each other's
// adjoint; the workspace gets no gradient.
Grads MaxPoolScatter::vjp(const VjpArgs& a) const {
  if (!a.needs(0)) return {Tensor(), Tensor()};
  return {apply(MaxPoolGather{w}, {a.grad, a.x(1)}), Tensor()};
}
Grads MaxPoolGather::vjp(const VjpArgs& a) const {
  if (!a.needs(0)) return {Tensor(), Tensor()};
  return {apply(MaxPoolScatter{w, a.input_shape(0)}, {a.grad, a.x(1)}),
          Tensor()};
}

}  // namespace tapeflow
