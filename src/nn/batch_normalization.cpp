// The BatchNormalization layer: fused_batch_norm over its channel axis, or,
// training with a mask, moments of the unmasked positions (Keras).
#include <numeric>

#include "core/op_error.hpp"
#include "tapeflow/autograd.hpp"
#include "tapeflow/creation.hpp"
#include "tapeflow/nn/layers.hpp"
#include "tapeflow/nn/normalization.hpp"
#include "tapeflow/ops/math.hpp"
#include "tapeflow/ops/reduce.hpp"
#include "tapeflow/ops/shape.hpp"

namespace tapeflow::nn {
namespace {

/** x with axis `from` moved to position `to`, the others in order. */
Tensor move_axis(const Tensor& x, int64_t from, int64_t to) {
  if (from == to) return x;
  std::vector<int64_t> perm(x.rank());
  std::iota(perm.begin(), perm.end(), 0);
  perm.erase(perm.begin() + from);
  perm.insert(perm.begin() + to, from);
  return transpose(x, perm);
}

/** Shape (1, ..., C, ..., 1) of rank `rank` with C at `axis`. */
Shape channel_shape(int64_t rank, int64_t axis, int64_t channels) {
  Shape s;
  for (int64_t i = 0; i < rank; ++i) s.push_back(i == axis ? channels : 1);
  return s;
}

/** running <- momentum * running + (1 - momentum) * batch where counted. */
void fold_into(Variable& running, const Tensor& batch, const Tensor& counted,
               double momentum) {
  const Tensor b = cast(batch, running.dtype());
  running.assign(
      where(counted, running * momentum + b * (1.0 - momentum), running));
}

}  // namespace

BatchNormalization::BatchNormalization(BatchNormOptions options)
    : Module("batch_normalization", options.name),
      options_(std::move(options)) {}

int64_t BatchNormalization::channel_axis(int64_t rank) const {
  if (rank < 2)
    throw op_error<ShapeError>(name(), "expected inputs of rank >= 2, got ",
                               "rank ", rank);
  const int64_t axis = options_.axis < 0 ? options_.axis + rank : options_.axis;
  if (axis < 0 || axis >= rank)
    throw op_error<IndexError>(name(), "expected axis in [", -rank, ", ", rank,
                               ") for inputs of rank ", rank, ", got ",
                               options_.axis);
  return axis;
}

void BatchNormalization::build(const Shape& input_shape) {
  const int64_t c = input_shape[channel_axis(input_shape.size())];
  if (options_.scale) gamma_ = add_weight("gamma", ones({c}));
  if (options_.center) beta_ = add_weight("beta", zeros({c}));
  moving_mean_ = add_weight("moving_mean", zeros({c}), false);
  moving_variance_ = add_weight("moving_variance", ones({c}), false);
}

Tensor BatchNormalization::forward(const Tensor& x) {
  const int64_t axis = channel_axis(x.rank());
  const Tensor y =
      fused_batch_norm(move_axis(x, axis, 1), gamma_, beta_, options_.epsilon,
                       is_training(), moving_mean_, moving_variance_,
                       options_.momentum)
          .y;
  return move_axis(y, 1, axis);
}

Tensor BatchNormalization::forward_masked(const Tensor& x, const Tensor& mask) {
  if (!is_training()) return forward(x);
  return masked_training(x, mask, channel_axis(x.rank()));
}

Tensor BatchNormalization::masked_training(const Tensor& x, const Tensor& mask,
                                           int64_t axis) {
  const Shape leading(x.shape().begin(), x.shape().end() - 1);
  if (!(mask.shape() == leading))
    throw op_error<ShapeError>(name(), "expected a mask of shape ",
                               leading.str(), " for inputs ", x.shape().str(),
                               ", got ", mask.shape().str());
  if (!is_floating(x.dtype()))
    throw op_error<DTypeError>(name(), "expected float32 or float64, got ",
                               dtype_name(x.dtype()));
  if (!(options_.epsilon > 0))
    throw op_error<ValueError>(name(), "expected epsilon > 0, got ",
                               options_.epsilon);
  const int64_t c = x.shape()[axis];
  std::vector<int64_t> others;
  for (int64_t i = 0; i < x.rank(); ++i)
    if (i != axis) others.push_back(i);
  const Tensor counted_at =
      broadcast_to(expand_dims(cast(mask, DType::bool_), -1), x.shape());
  const Tensor zero = zeros({}, x.dtype(), x.device());
  const Tensor one = ones({}, x.dtype(), x.device());
  // where, not a product: a padded step's inf or NaN stays out of the
  // statistics and of their gradients (0 * NaN is NaN).
  const Tensor count =
      sum(cast(counted_at, x.dtype()), others, /*keepdims=*/true);
  const Tensor divisor = maximum(count, one);
  const Tensor counted_x = where(counted_at, x, zero);
  const Tensor m = sum(counted_x, others, true) / divisor;
  const Tensor v =
      sum(where(counted_at, square(counted_x - m), zero), others, true) /
      divisor;
  const Shape k = channel_shape(x.rank(), axis, c);
  const auto param = [&](const Variable& p) {
    return p.defined() ? reshape(cast(p, x.dtype()), k) : Tensor();
  };
  const Tensor y = batch_normalization(x, m, v, param(beta_), param(gamma_),
                                       options_.epsilon);
  NoGradGuard no_grad;
  const Tensor n = reshape(count, {c});
  const Tensor counted = greater(n, zero);
  const Tensor bessel = where(greater(n, one), n / (n - 1.0), one);
  fold_into(moving_mean_, reshape(m, {c}), counted, options_.momentum);
  fold_into(moving_variance_, reshape(v, {c}) * bessel, counted,
            options_.momentum);
  return y;
}

}  // namespace tapeflow::nn
