// Ops that copy between layouts: concat, gather, one_hot, reverse, shuffle.
#include "core/checked.hpp"
#include "core/creation_internal.hpp"
#include "ops/apply.hpp"
#include "ops/axes.hpp"
#include "ops/shape_ops.hpp"
#include "tapeflow/creation.hpp"
#include "tapeflow/ops/shape.hpp"

namespace tapeflow {
Tensor concat(const std::vector<Tensor>& tensors, int64_t axis) {
  if (tensors.empty())
    throw ValueError("[concat] expected at least one tensor, got none");
  const Tensor& first = tensors[0];
  const int64_t a = normalize_axis(axis, first.rank(), "concat");
  for (size_t i = 1; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    if (t.dtype() != first.dtype())
      throw DTypeError("[concat] expected every tensor of dtype " +
                       std::string(dtype_name(first.dtype())) + ", got " +
                       std::string(dtype_name(t.dtype())) + " at " +
                       std::to_string(i));
    bool ok = t.rank() == first.rank();
    for (int64_t d = 0; ok && d < t.rank(); ++d)
      ok = d == a || t.shape()[d] == first.shape()[d];
    if (!ok)
      throw ShapeError("[concat] expected shapes matching " +
                       first.shape().str() + " except on axis " +
                       std::to_string(axis) + ", got " + t.shape().str() +
                       " at " + std::to_string(i));
  }
  if (tensors.size() == 1) return value_of(first);
  return tapeflow::apply(Concat{a}, Inputs(tensors.data(), tensors.size()));
}
TensorSpec Concat::infer(Inputs in) const {
  Shape s = in[0].shape();
  s[axis] = 0;
  for (const Tensor& t : in)
    s[axis] = checked_add(s[axis], t.shape()[axis], "concat",
                          "the concatenated extent");
  return {s, in[0].dtype()};
}
Grads Concat::vjp(const VjpArgs& a) const {
  std::vector<int64_t> sizes;
  for (const auto& spec : a.input_specs) sizes.push_back(spec.shape[axis]);
  return split(a.grad, sizes, axis);
}

Tensor gather(const Tensor& params, const Tensor& indices, int64_t axis) {
  const int64_t a = normalize_axis(axis, params.rank(), "gather");
  if (!is_integral(indices.dtype()))
    throw DTypeError("[gather] expected int32 or int64 indices, got " +
                     std::string(dtype_name(indices.dtype())));
  if (params.rank() - 1 + indices.rank() > kMaxRank)
    throw ShapeError(
        "[gather] expected a result of rank <= " + std::to_string(kMaxRank) +
        ", got params " + params.shape().str() + " and indices " +
        indices.shape().str());
  return apply(Gather{a}, {params, indices});
}
TensorSpec Gather::infer(Inputs in) const {
  const Shape& p = in[0].shape();
  Shape s;
  for (int64_t i = 0; i < axis; ++i) s.push_back(p[i]);
  for (int64_t d : in[1].shape()) s.push_back(d);
  for (int64_t i = axis + 1; i < p.size(); ++i) s.push_back(p[i]);
  return {s, in[0].dtype()};
}
Grads Gather::vjp(const VjpArgs& a) const {
  return {apply(GatherGrad{axis, a.input_shape(0)}, {a.x(1), a.grad}),
          Tensor()};
}
Grads GatherGrad::vjp(const VjpArgs& a) const {
  return {Tensor(), gather(a.grad, a.x(0), axis)};
}

Tensor one_hot(const Tensor& indices, int64_t depth, double on_value,
               double off_value, DType dtype) {
  if (!is_integral(indices.dtype()))
    throw DTypeError("[one_hot] expected int32 or int64 indices, got " +
                     std::string(dtype_name(indices.dtype())));
  if (depth < 0)
    throw ValueError("[one_hot] expected depth >= 0, got " +
                     std::to_string(depth));
  if (indices.rank() + 1 > kMaxRank)
    throw ShapeError("[one_hot] expected indices of rank < " +
                     std::to_string(kMaxRank) + ", got " +
                     indices.shape().str());
  // An int32 one_hot of 1e20 would wrap: refused, as a scalar op refuses it.
  check_representable(on_value, dtype, "one_hot");
  check_representable(off_value, dtype, "one_hot");
  return apply(OneHot{depth, on_value, off_value, dtype}, {indices});
}
TensorSpec OneHot::infer(Inputs in) const {
  Shape s = in[0].shape();
  s.push_back(depth);
  return {s, dtype};
}

Tensor reverse(const Tensor& x, const std::vector<int64_t>& axes) {
  Shape moving;
  std::vector<bool> named(x.rank(), false);
  for (const int64_t axis : axes) {
    const int64_t a = normalize_axis(axis, x.rank(), "reverse");
    if (named[a])
      throw op_error<ValueError>("reverse",
                                 "expected each axis once, got axis ", a,
                                 " more than once");
    named[a] = true;
    if (x.shape()[a] > 1) moving.push_back(a);
  }
  if (moving.empty()) return value_of(x);
  return apply(Reverse{moving}, {x});
}
Grads Reverse::vjp(const VjpArgs& a) const {
  return {apply(Reverse{axes}, {a.grad})};
}
Tensor Reverse::source(const Tensor& x) const {
  Shape strides = x.strides();
  int64_t offset = x.offset();
  for (const int64_t a : axes) {
    offset += (x.shape()[a] - 1) * strides[a];
    strides[a] = -strides[a];
  }
  return make_view(x, x.shape(), strides, offset);
}

}  // namespace tapeflow
