// argsort, one op with a kernel per device; sort and top_k as composites of
// it, slice and gather, so their gradients are gather's: each output
// gradient goes back to the position its value came from. The positions
// are a permutation of each line, so gather's gradient never adds two
// gradients into one place, and is deterministic on every device.
#include "tapeflow/ops/sort.hpp"

#include <numeric>

#include "core/dtype_dispatch.hpp"
#include "core/op_error.hpp"
#include "ops/apply.hpp"
#include "ops/axes.hpp"
#include "ops/composite.hpp"
#include "ops/reduce_ops.hpp"
#include "tapeflow/creation.hpp"
#include "tapeflow/ops/math.hpp"
#include "tapeflow/ops/shape.hpp"

namespace tapeflow {
namespace {

/**
 * x's entries along `axis` at `positions` (int64, x's shape but along the
 * axis, each in range): the axis moved last, each line's positions offset
 * by the line's start, one gather over the flattened x.
 */
Tensor take_along(const Tensor& x, const Tensor& positions, int64_t axis) {
  const int64_t last = x.rank() - 1;
  if (axis != last) {
    std::vector<int64_t> perm(x.rank()), back(x.rank());
    std::iota(perm.begin(), perm.end(), 0);
    perm.erase(perm.begin() + axis);
    perm.push_back(axis);
    for (int64_t i = 0; i < x.rank(); ++i) back[perm[i]] = i;
    return transpose(
        take_along(transpose(x, perm), transpose(positions, perm), last), back);
  }
  if (positions.numel() == 0)
    return full(positions.shape(), 0.0, x.dtype(), x.device());
  const int64_t n = x.shape()[last];
  const int64_t lines = positions.numel() / positions.shape()[last];
  Shape line_shape = positions.shape();
  line_shape[last] = 1;
  const Tensor starts =
      reshape(arange<int64_t>(0, lines * n, n), line_shape).to(x.device());
  const Tensor flat = reshape(positions + starts, {-1});
  return reshape(gather(reshape(x, {-1}), flat, 0), positions.shape());
}

}  // namespace

Tensor argsort(const Tensor& x, int64_t axis, bool descending) {
  if (is_string(x.dtype())) refuse_string("argsort");
  const int64_t a = normalize_axis(axis, x.rank(), "argsort");
  return apply(ArgSort{a, descending}, {x});
}

Tensor sort(const Tensor& x, int64_t axis, bool descending) {
  if (is_string(x.dtype())) refuse_string("sort");
  const int64_t a = normalize_axis(axis, x.rank(), "sort");
  return composite("sort",
                   [&] { return take_along(x, argsort(x, a, descending), a); });
}

TopK top_k(const Tensor& x, int64_t k) {
  if (is_string(x.dtype())) refuse_string("top_k");
  if (x.rank() == 0)
    throw op_error<ShapeError>("top_k", "expected a tensor of rank >= 1, got ",
                               "shape ", x.shape().str());
  const int64_t last = x.rank() - 1, n = x.shape()[last];
  if (k < 0 || k > n)
    throw op_error<ValueError>("top_k", "expected k in [0, ", n,
                               "] (the last axis' extent), got ", k);
  return composite("top_k", [&] {
    std::vector<int64_t> begin(x.rank(), 0), size(x.rank(), -1);
    size[last] = k;
    const Tensor indices = slice(argsort(x, last, true), begin, size);
    return TopK{take_along(x, indices, last), indices};
  });
}

}  // namespace tapeflow
