// View ops (no copy): reshape, transpose, slice, broadcast_to and the
// helpers built on them.
#include <algorithm>
#include <numeric>
#include <optional>

#include "core/checked.hpp"
#include "core/op_error.hpp"
#include "ops/apply.hpp"
#include "ops/axes.hpp"
#include "ops/composite.hpp"
#include "ops/shape_ops.hpp"
#include "tapeflow/ops/reduce.hpp"
#include "tapeflow/ops/shape.hpp"

namespace tapeflow {
namespace {
std::string list_str(const std::vector<int64_t>& v) {
  return Shape(v).str();
}

/**
 * Strides that show x's elements in `shape` without a copy, or nullopt.
 * Runs of x's axes that are contiguous with one another (each stride the
 * next one's times its extent) may be split or merged freely, and size-1
 * axes come and go: PyTorch's view rule. So squeezing a step out of a
 * (batch, time, features) sequence, or reshaping a slice of whole rows,
 * stays a view; a transposed matrix flattened is copied.
 */
std::optional<Shape> view_strides(const Tensor& x, const Shape& shape) {
  const Shape& old_shape = x.shape();
  const Shape& old_strides = x.strides();
  if (x.numel() == 0 || old_shape.size() == 0) return contiguous_strides(shape);
  Shape strides(std::vector<int64_t>(shape.size(), 0));
  int64_t view_d = static_cast<int64_t>(shape.size()) - 1;
  int64_t chunk_stride = old_strides[old_shape.size() - 1];
  int64_t tensor_numel = 1, view_numel = 1;
  for (int64_t d = static_cast<int64_t>(old_shape.size()) - 1; d >= 0; --d) {
    tensor_numel *= old_shape[d];
    // A chunk ends at axis 0 or where the axis before does not continue it.
    if (d == 0 || (old_shape[d - 1] != 1 &&
                   old_strides[d - 1] != tensor_numel * chunk_stride)) {
      while (view_d >= 0 && (view_numel < tensor_numel || shape[view_d] == 1)) {
        strides[view_d] = view_numel * chunk_stride;
        view_numel *= shape[view_d];
        --view_d;
      }
      if (view_numel != tensor_numel) return std::nullopt;
      if (d > 0) {
        chunk_stride = old_strides[d - 1];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  if (view_d != -1) return std::nullopt;
  return strides;
}
}  // namespace

Tensor reshape(const Tensor& x, const Shape& shape) {
  Shape s = shape;
  int64_t known = 1, infer_at = -1;
  for (int64_t i = 0; i < s.size(); ++i) {
    if (s[i] == -1) {
      if (infer_at >= 0)
        throw ShapeError("[reshape] expected at most one -1 extent, got " +
                         shape.str());
      infer_at = i;
    } else if (s[i] < 0) {
      throw ShapeError("[reshape] expected extents >= -1, got " + shape.str());
    } else {
      known = checked_mul(known, s[i], "reshape", "the element count");
    }
  }
  const auto mismatch = [&] {
    return ShapeError("[reshape] expected a shape with " +
                      std::to_string(x.numel()) + " elements (input " +
                      x.shape().str() + "), got " + shape.str());
  };
  if (infer_at >= 0) {
    if (known == 0)
      throw ShapeError(
          "[reshape] expected a -1 extent beside non-zero extents only (a 0 "
          "leaves it nothing to be inferred from), got " +
          shape.str() + " for input " + x.shape().str());
    if (x.numel() % known != 0) throw mismatch();
    s[infer_at] = x.numel() / known;
  }
  if (checked_numel(s, "reshape") != x.numel()) throw mismatch();
  if (s == x.shape()) return value_of(x);
  return apply_view(Reshape{s}, x);
}
Tensor value_of(const Tensor& x) {
  if (!x.defined() || !x.impl()->variable) return x;
  return apply_view(Reshape{x.shape()}, x);
}
Tensor Reshape::view(const Tensor& x) const {
  if (const auto strides = view_strides(x, shape))
    return make_view(x, shape, *strides, x.offset());
  const Tensor c = materialize(x);
  return make_view(c, shape, contiguous_strides(shape), c.offset());
}
Grads Reshape::vjp(const VjpArgs& a) const {
  return {reshape(a.grad, a.input_shape())};
}

Tensor transpose(const Tensor& x, const std::vector<int64_t>& perm) {
  std::vector<int64_t> p = perm;
  if (p.empty()) {
    p.resize(x.rank());
    std::iota(p.rbegin(), p.rend(), 0);
  }
  std::vector<int64_t> sorted = p;
  for (auto& a : sorted) a = a < 0 ? a + x.rank() : a;
  std::sort(sorted.begin(), sorted.end());
  std::vector<int64_t> expected(x.rank());
  std::iota(expected.begin(), expected.end(), 0);
  if (sorted != expected)
    throw ValueError("[transpose] expected a permutation of " +
                     std::to_string(x.rank()) + " axes, got " + list_str(perm));
  for (auto& a : p) a = a < 0 ? a + x.rank() : a;
  return apply_view(Transpose{Shape(p)}, x);
}
Tensor Transpose::view(const Tensor& x) const {
  Shape s, st;
  for (int64_t a : perm) {
    s.push_back(x.shape()[a]);
    st.push_back(x.strides()[a]);
  }
  return make_view(x, s, st, x.offset());
}
Grads Transpose::vjp(const VjpArgs& a) const {
  std::vector<int64_t> inverse(perm.size());
  for (int64_t i = 0; i < perm.size(); ++i) inverse[perm[i]] = i;
  return {transpose(a.grad, inverse)};
}

Tensor slice(const Tensor& x, const std::vector<int64_t>& begin,
             const std::vector<int64_t>& size) {
  if (static_cast<int64_t>(begin.size()) != x.rank() ||
      static_cast<int64_t>(size.size()) != x.rank())
    throw ShapeError("[slice] expected begin and size of length " +
                     std::to_string(x.rank()) + ", got " + list_str(begin) +
                     " and " + list_str(size));
  Shape b(begin), s(size);
  for (int64_t i = 0; i < x.rank(); ++i) {
    const int64_t n = x.shape()[i];
    const bool begin_ok = b[i] >= 0 && b[i] <= n;
    if (begin_ok && s[i] == -1) s[i] = n - b[i];
    // size > n - begin, not begin + size > n: that sum can wrap.
    if (!begin_ok || s[i] < 0 || s[i] > n - b[i])
      throw IndexError("[slice] expected begin + size within " +
                       x.shape().str() + " on axis " + std::to_string(i) +
                       ", got begin " + list_str(begin) + " size " +
                       list_str(size));
  }
  return apply_view(Slice{b, s}, x);
}
Tensor Slice::view(const Tensor& x) const {
  int64_t offset = x.offset();
  for (int64_t i = 0; i < x.rank(); ++i) offset += begin[i] * x.strides()[i];
  return make_view(x, size, x.strides(), offset);
}
Grads Slice::vjp(const VjpArgs& a) const {
  return {apply(SliceGrad{begin, a.input_shape()}, {a.grad})};
}
Grads SliceGrad::vjp(const VjpArgs& a) const {
  return {slice(a.grad, begin.to_vector(), a.input_shape().to_vector())};
}

Tensor broadcast_to(const Tensor& x, const Shape& shape) {
  checked_numel(shape, "broadcast_to");
  const Shape b = broadcast_shapes(x.shape(), shape, "broadcast_to");
  if (!(b == shape))
    throw ShapeError("[broadcast_to] expected " + x.shape().str() +
                     " to broadcast to " + shape.str() + ", got result " +
                     b.str());
  if (x.shape() == shape) return value_of(x);
  return apply_view(BroadcastTo{shape}, x);
}
Tensor BroadcastTo::view(const Tensor& x) const {
  Shape st;
  st.resize(shape.size());
  const int64_t lead = shape.size() - x.rank();
  for (int64_t i = lead; i < shape.size(); ++i)
    st[i] = x.shape()[i - lead] == 1 ? 0 : x.strides()[i - lead];
  return make_view(x, shape, st, x.offset());
}
Grads BroadcastTo::vjp(const VjpArgs& a) const {
  return {sum_to(a.grad, a.input_shape())};
}

Tensor squeeze(const Tensor& x, const std::vector<int64_t>& axes) {
  std::vector<bool> drop(x.rank(), false);
  for (int64_t a : axes) {
    const int64_t i = normalize_axis(a, x.rank(), "squeeze");
    if (x.shape()[i] != 1)
      throw ShapeError("[squeeze] expected axis " + std::to_string(a) +
                       " of size 1, got " + x.shape().str());
    drop[i] = true;
  }
  Shape s;
  for (int64_t i = 0; i < x.rank(); ++i)
    if (!(axes.empty() ? x.shape()[i] == 1 : drop[i]))
      s.push_back(x.shape()[i]);
  return reshape(x, s);
}

Tensor expand_dims(const Tensor& x, int64_t axis) {
  const int64_t i = normalize_axis(axis, x.rank() + 1, "expand_dims");
  if (x.rank() + 1 > kMaxRank)
    throw op_error<ShapeError>("expand_dims", "expected a tensor of rank < ",
                               kMaxRank, ", got shape ", x.shape().str());
  Shape s;
  for (int64_t k = 0; k < x.rank(); ++k) {
    if (k == i) s.push_back(1);
    s.push_back(x.shape()[k]);
  }
  if (i == x.rank()) s.push_back(1);
  return reshape(x, s);
}

std::vector<Tensor> split(const Tensor& x, const std::vector<int64_t>& sizes,
                          int64_t axis) {
  const int64_t a = normalize_axis(axis, x.rank(), "split");
  const int64_t extent = x.shape()[a];
  const auto wrong_sizes = [&](const char* expected) {
    return op_error<ShapeError>("split", "expected ", expected, " ", extent,
                                " (axis ", axis, "), got ", list_str(sizes));
  };
  // tf.split: one size may be -1, the rest of the axis.
  std::vector<int64_t> parts_sizes = sizes;
  int64_t total = 0, inferred = -1;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] == -1 && inferred < 0)
      inferred = static_cast<int64_t>(i);
    else if (sizes[i] < 0)
      throw wrong_sizes("sizes >= 0 (one may be -1) summing to");
    else
      total = checked_add(total, sizes[i], "split", "the sum of sizes");
  }
  if (inferred >= 0 && total <= extent)
    parts_sizes[inferred] = extent - total;
  else if (total != extent)
    throw wrong_sizes(inferred >= 0 ? "sizes summing to at most"
                                    : "sizes summing to");
  std::vector<Tensor> parts;
  std::vector<int64_t> begin(x.rank(), 0), size = x.shape().to_vector();
  for (int64_t s : parts_sizes) {
    size[a] = s;
    parts.push_back(slice(x, begin, size));
    begin[a] += s;
  }
  return parts;
}

std::vector<Tensor> split(const Tensor& x, int64_t num, int64_t axis) {
  const int64_t a = normalize_axis(axis, x.rank(), "split");
  if (num <= 0 || x.shape()[a] % num != 0)
    throw ShapeError("[split] expected a part count dividing " +
                     std::to_string(x.shape()[a]) + ", got " +
                     std::to_string(num));
  check_part_count(x, num, "split");
  return composite("split", [&] {
    return split(x, std::vector<int64_t>(num, x.shape()[a] / num), a);
  });
}

}  // namespace tapeflow
