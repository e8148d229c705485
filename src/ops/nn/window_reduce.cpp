#include "ops/nn/window_reduce.hpp"

#include "tapeflow/creation.hpp"
#include "tapeflow/ops/math.hpp"
#include "tapeflow/ops/reduce.hpp"
#include "tapeflow/ops/shape.hpp"

namespace tapeflow::window {
namespace {

/** x's elements at position `k` of every window, along `axis`. */
Tensor take(const Tensor& x, int64_t axis, const Windows& windows, size_t k) {
  std::vector<int64_t> index;
  index.reserve(windows.size());
  for (const auto& w : windows) index.push_back(w[k]);
  const auto out = static_cast<int64_t>(windows.size());
  return gather(x, from_vector(index, {out}).to(x.device()), axis);
}

}  // namespace

Tensor reduce(const Tensor& x, int64_t axis, const Windows& windows, bool max) {
  if (max) {
    // A left fold of maximum: its gradient goes to the earlier operand on
    // ties, so to a window's first maximum, as the pooling kernels' does.
    Tensor acc = take(x, axis, windows, 0);
    for (size_t k = 1; k < windows.front().size(); ++k)
      acc = maximum(acc, take(x, axis, windows, k));
    return acc;
  }
  const int64_t out = static_cast<int64_t>(windows.size());
  const int64_t k = static_cast<int64_t>(windows.front().size());
  std::vector<int64_t> index;
  for (const auto& w : windows) index.insert(index.end(), w.begin(), w.end());
  const Tensor taken =
      gather(x, from_vector(index, {out, k}).to(x.device()), axis);
  return mean(taken, {axis + 1});
}

}  // namespace tapeflow::window
