#include "tapeflow/optim/clipping.hpp"

#include <string>

#include "core/op_error.hpp"
#include "tapeflow/creation.hpp"
#include "tapeflow/ops/math.hpp"

namespace tapeflow::optim {

Tensor clip_by_value(const Tensor& t, double lo, double hi) {
  if (!(lo <= hi))
    throw ValueError("[clip_by_value] expected lo <= hi, got lo " +
                     std::to_string(lo) + " and hi " + std::to_string(hi));
  return clip(t, lo, hi);
}

std::vector<Tensor> clip_by_value(const std::vector<Tensor>& ts, double lo,
                                  double hi) {
  std::vector<Tensor> out;
  out.reserve(ts.size());
  for (const Tensor& t : ts)
    out.push_back(t.defined() ? clip_by_value(t, lo, hi) : Tensor());
  return out;
}

Tensor clip_by_norm(const Tensor& t, double clip_norm, const Axes& axes) {
  if (!(clip_norm >= 0.0))
    throw ValueError("[clip_by_norm] expected clip_norm >= 0, got " +
                     std::to_string(clip_norm));
  for (int64_t axis : axes)
    if (axis < -t.rank() || axis >= t.rank())
      throw op_error<IndexError>("clip_by_norm", "expected axes in [",
                                 -t.rank(), ", ", t.rank(), "), got ", axis);
  // As TensorFlow: a zero norm gives a zero gradient, never a NaN.
  const Tensor l2sum = sum(t * t, axes, /*keepdims=*/true);
  const Tensor positive = l2sum > zeros_like(l2sum);
  const Tensor l2norm =
      where(positive, sqrt(where(positive, l2sum, ones_like(l2sum))), l2sum);
  return t * clip_norm / maximum(l2norm, scalar_like(l2norm, clip_norm));
}

namespace {
/**
 * An integer tensor's norm would be an integer, and its clipped values
 * truncated to 0: refused, as TensorFlow refuses it.
 */
void check_floating(const std::vector<Tensor>& ts, const char* op) {
  for (size_t i = 0; i < ts.size(); ++i)
    if (ts[i].defined() && !is_floating(ts[i].dtype()))
      throw op_error<DTypeError>(op, "expected floating tensors, got ",
                                 dtype_name(ts[i].dtype()), " at ", i);
}
}  // namespace

Tensor global_norm(const std::vector<Tensor>& ts) {
  check_floating(ts, "global_norm");
  Tensor total;
  for (const Tensor& t : ts) {
    if (!t.defined()) continue;
    const Tensor s = sum(t * t);
    total = total.defined() ? total + s : s;
  }
  return total.defined() ? sqrt(total) : scalar(0.0);
}

std::pair<std::vector<Tensor>, Tensor> clip_by_global_norm(
    const std::vector<Tensor>& ts, double clip_norm, const Tensor& use_norm) {
  if (!(clip_norm >= 0.0))
    throw ValueError("[clip_by_global_norm] expected clip_norm >= 0, got " +
                     std::to_string(clip_norm));
  check_floating(ts, "clip_by_global_norm");
  if (use_norm.defined() && use_norm.rank() != 0)
    throw op_error<ShapeError>("clip_by_global_norm",
                               "expected a scalar use_norm, got shape ",
                               use_norm.shape().str());
  const Tensor norm = use_norm.defined() ? use_norm : global_norm(ts);
  // scale + (norm - norm): NaN when the norm is inf or NaN, as TensorFlow.
  const Tensor scale =
      minimum(1.0 / norm, scalar_like(norm, 1.0) / clip_norm) * clip_norm +
      (norm - norm);
  std::vector<Tensor> out;
  out.reserve(ts.size());
  for (const Tensor& t : ts)
    out.push_back(!t.defined()                 ? Tensor()
                  : t.dtype() == scale.dtype() ? t * scale
                                               : t * cast(scale, t.dtype()));
  return {out, norm};
}

}  // namespace tapeflow::optim
