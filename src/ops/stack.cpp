// stack and unstack: the time loop of a recurrent layer walks a sequence
// with unstack and collects its outputs with stack.
#include "core/op_error.hpp"
#include "ops/axes.hpp"
#include "ops/composite.hpp"
#include "tapeflow/autograd.hpp"
#include "tapeflow/ops/shape.hpp"

namespace tapeflow {

Tensor stack(const std::vector<Tensor>& tensors, int64_t axis) {
  if (tensors.empty())
    throw ValueError("[stack] expected at least one tensor, got none");
  const Shape& shape = tensors[0].shape();
  const int64_t a = normalize_axis(axis, tensors[0].rank() + 1, "stack");
  std::vector<Tensor> expanded;
  expanded.reserve(tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (tensors[i].shape() != shape)
      throw op_error<ShapeError>("stack", "expected every tensor of shape ",
                                 shape.str(), ", got ",
                                 tensors[i].shape().str(), " at ", i);
    expanded.push_back(expand_dims(tensors[i], a));
  }
  return composite("stack", [&] { return concat(expanded, a); });
}

/**
 * One recorded op with a single stack as its gradient. Slices would each
 * pad their gradient to x's full shape: a loop over T steps would cost T^2.
 */
std::vector<Tensor> unstack(const Tensor& x, int64_t axis) {
  const int64_t a = normalize_axis(axis, x.rank(), "unstack");
  if (x.shape()[a] == 0) return {};
  check_part_count(x, x.shape()[a], "unstack");
  auto forward = [a](const std::vector<Tensor>& in) {
    const Tensor& whole = in[0];
    std::vector<int64_t> begin(whole.rank(), 0);
    std::vector<int64_t> size = whole.shape().to_vector();
    size[a] = 1;
    CustomResult r;
    for (int64_t i = 0; i < whole.shape()[a]; ++i) {
      begin[a] = i;
      r.outputs.push_back(squeeze(slice(whole, begin, size), {a}));
    }
    r.grad = [a](const std::vector<Tensor>& grads) {
      return std::vector<Tensor>{stack(grads, a)};
    };
    return r;
  };
  return custom_gradient(forward, {x});
}

}  // namespace tapeflow
