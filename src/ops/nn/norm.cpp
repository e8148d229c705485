// Normalization: batch_normalization, moments and layer_normalization as
// composites; fused_batch_norm as an op whose gradient is an op too.
#include "core/op_error.hpp"
#include "ops/apply.hpp"
#include "ops/composite.hpp"
#include "ops/nn/norm_ops.hpp"
#include "tapeflow/autograd.hpp"
#include "tapeflow/creation.hpp"
#include "tapeflow/nn/normalization.hpp"
#include "tapeflow/ops/math.hpp"
#include "tapeflow/ops/reduce.hpp"
#include "tapeflow/ops/shape.hpp"

namespace tapeflow {
namespace {

constexpr const char* kFused = "fused_batch_norm";

/** A (C,) parameter in x's dtype; `fill` where it is absent. */
Tensor channel_param(const Tensor& t, const Tensor& x, double fill,
                     const char* what) {
  const int64_t c = x.shape()[1];
  if (!t.defined()) return full({c}, fill, x.dtype(), x.device());
  if (!(t.shape() == Shape{c}))
    throw op_error<ShapeError>(kFused, "expected ", what, " of shape ",
                               Shape{c}.str(), ", got ", t.shape().str());
  // An integer running mean would truncate every update (1.5 became 1).
  if (!is_floating(t.dtype()))
    throw op_error<DTypeError>(kFused, "expected a floating ", what, ", got ",
                               dtype_name(t.dtype()));
  return t.dtype() == x.dtype() ? t : cast(t, x.dtype());
}

}  // namespace

namespace nn {

Tensor batch_normalization(const Tensor& x, const Tensor& mean,
                           const Tensor& variance, const Tensor& offset,
                           const Tensor& scale, double variance_epsilon) {
  return composite("batch_normalization", [&] {
    Tensor inv = rsqrt(variance + variance_epsilon);
    if (scale.defined()) inv = inv * scale;
    return x * inv + (offset.defined() ? offset - mean * inv : -(mean * inv));
  });
}

std::pair<Tensor, Tensor> moments(const Tensor& x,
                                  const std::vector<int64_t>& axes,
                                  bool keepdims) {
  return composite("moments", [&] {
    // d var / d mean is 0, so the mean needs no gradient path here (as in TF).
    const Tensor m = mean(x, axes, true);
    const Tensor v = mean(square(x - stop_gradient(m)), axes, keepdims);
    return std::pair{keepdims ? m : reshape(m, v.shape()), v};
  });
}

Tensor layer_normalization(const Tensor& x, int64_t begin_axis,
                           const Tensor& gamma, const Tensor& beta,
                           double epsilon) {
  const int64_t first = begin_axis < 0 ? begin_axis + x.rank() : begin_axis;
  if (first < 0 || first >= x.rank())
    throw IndexError("[layer_normalization] expected begin_axis in [" +
                     std::to_string(-x.rank()) + ", " +
                     std::to_string(x.rank()) + "), got " +
                     std::to_string(begin_axis));
  return composite("layer_normalization", [&] {
    std::vector<int64_t> axes;
    for (int64_t i = first; i < x.rank(); ++i) axes.push_back(i);
    const auto [m, v] = moments(x, axes, true);
    Tensor y = (x - m) * rsqrt(v + epsilon);
    if (gamma.defined()) y = y * gamma;
    if (beta.defined()) y = y + beta;
    return y;
  });
}

std::pair<Tensor, Tensor> batch_moments(const Tensor& x) {
  if (!is_floating(x.dtype()))
    throw DTypeError("[batch_moments] expected float32 or float64, got " +
                     std::string(dtype_name(x.dtype())));
  if (x.rank() < 2)
    throw ShapeError(
        "[batch_moments] expected an input of rank >= 2 (N, C, ...), got " +
        x.shape().str());
  auto [mean, variance] = apply(BatchMoments{}, {x});
  return {mean, variance};
}

BatchNormResult fused_batch_norm(const Tensor& x, const Tensor& scale,
                                 const Tensor& offset, double epsilon,
                                 bool training, Tensor running_mean,
                                 Tensor running_var, double momentum) {
  if (!is_floating(x.dtype()))
    throw op_error<DTypeError>(kFused, "expected float32 or float64, got ",
                               dtype_name(x.dtype()));
  if (x.rank() < 2)
    throw op_error<ShapeError>(
        kFused, "expected an input of rank >= 2 (N, C, ...), got ",
        x.shape().str());
  if (!(epsilon > 0))
    throw op_error<ValueError>(kFused, "expected epsilon > 0, got ", epsilon);
  const Tensor s = channel_param(scale, x, 1.0, "scale");
  const Tensor o = channel_param(offset, x, 0.0, "offset");
  if (!training) {
    if (!running_mean.defined() || !running_var.defined())
      throw op_error<ValueError>(
          kFused,
          "expected running_mean and running_var when not "
          "training, got none");
    const Tensor m = channel_param(running_mean, x, 0.0, "running_mean");
    const Tensor v = channel_param(running_var, x, 1.0, "running_var");
    auto [y, mean, variance] =
        apply(FusedBatchNorm{epsilon, false}, {x, s, o, m, v});
    return {y, mean, variance};
  }
  auto [y, m, v] = apply(FusedBatchNorm{epsilon, true}, {x, s, o});
  NoGradGuard no_grad;
  const int64_t channels = x.shape()[1];
  const int64_t per_channel = channels == 0 ? 0 : x.numel() / channels;
  if (running_mean.defined())
    channel_param(running_mean, x, 0.0, "running_mean");
  if (running_var.defined()) channel_param(running_var, x, 1.0, "running_var");
  // A batch of no elements (an empty last batch) has no statistics to fold
  // in: the running ones stay as they were, as in PyTorch, not NaN forever.
  if (per_channel == 0) return {y, m, v};
  const double n = static_cast<double>(per_channel);
  if (running_mean.defined())
    write_into(running_mean, running_mean * momentum + m * (1.0 - momentum),
               kFused);
  if (running_var.defined()) {
    const double bessel = n > 1 ? n / (n - 1) : 1.0;
    write_into(running_var,
               running_var * momentum + v * (bessel * (1.0 - momentum)),
               kFused);
  }
  return {y, m, v};
}

}  // namespace nn

namespace {

/**
 * Gradient with respect to x (N, C, ...) of its per-channel mean and biased
 * variance, from their gradients (either may be undefined):
 * d mean / dx = 1 / M, d var / dx = 2 (x - mean) / M, M = numel / C.
 */
Tensor moments_grad(const Tensor& x, const Tensor& mean, const Tensor& dmean,
                    const Tensor& dvar) {
  const int64_t c = x.shape()[1];
  Shape k;
  for (int64_t i = 0; i < x.rank(); ++i) k.push_back(i == 1 ? c : 1);
  const double count = static_cast<double>(c ? x.numel() / c : 0);
  Tensor dx;
  if (dmean.defined())
    dx = broadcast_to(reshape(dmean, k) * (1.0 / count), x.shape());
  if (dvar.defined()) {
    const Tensor t = reshape(dvar, k) * (2.0 / count) * (x - reshape(mean, k));
    dx = dx.defined() ? dx + t : t;
  }
  return dx;
}

}  // namespace

Grads FusedBatchNorm::vjp(const VjpArgs& a) const {
  const Tensor& x = a.x(0);
  const Tensor& mean = training ? a.output(1) : a.x(3);
  const Tensor& variance = training ? a.output(2) : a.x(4);
  Grads g(a.input_specs.size());
  if (a.grad.defined()) {
    auto [dx, dscale, doffset] = apply(BatchNormGrad{epsilon, training},
                                       {x, a.grad, a.x(1), mean, variance});
    g[0] = dx;
    g[1] = dscale;
    g[2] = doffset;
  }
  if (!training) {  // the statistics pass through unchanged
    g[3] = a.grads[1];
    g[4] = a.grads[2];
    return g;
  }
  if (a.grads[1].defined() || a.grads[2].defined()) {
    const Tensor through = moments_grad(x, mean, a.grads[1], a.grads[2]);
    g[0] = g[0].defined() ? g[0] + through : through;
  }
  return g;
}

Grads BatchMoments::vjp(const VjpArgs& a) const {
  return {moments_grad(a.x(), a.output(0), a.grads[0], a.grads[1])};
}

Grads BatchNormGrad::vjp(const VjpArgs&) const {
  throw ValueError(
      "[fused_batch_norm] expected first-order gradients only, got a request "
      "for a second-order one (nn::batch_normalization, the composite, has "
      "gradients of any order)");
}

}  // namespace tapeflow
