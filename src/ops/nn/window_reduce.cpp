#include "ops/nn/window_reduce.hpp"

#include <algorithm>
#include <vector>

#include "tapeflow/creation.hpp"
#include "tapeflow/ops/math.hpp"
#include "tapeflow/ops/shape.hpp"

namespace tapeflow::window {
namespace {

int64_t floor_div(int64_t a, int64_t b) {
  return a / b - (a % b != 0 && a < 0 ? 1 : 0);
}

/** Tap j of every window along `axis`, 0 where it reads padding. */
Tensor take(const Tensor& x, int64_t axis, const Dilated& w, int64_t j,
            const Tensor& zero) {
  const int64_t in = x.shape()[axis];
  std::vector<int64_t> index(w.outputs);
  std::vector<bool> inside(w.outputs);
  bool padded = false;
  for (int64_t o = 0; o < w.outputs; ++o) {
    const int64_t at = o + j * w.rate - w.offset;
    inside[o] = at >= 0 && at < in;
    padded |= !inside[o];
    index[o] = std::clamp<int64_t>(at, 0, in - 1);
  }
  const Tensor tap =
      gather(x, from_vector(index, {w.outputs}).to(x.device()), axis);
  if (!padded) return tap;
  Shape along(std::vector<int64_t>(x.rank(), 1));
  along[axis] = w.outputs;
  return where(from_vector(inside, along).to(x.device()), tap, zero);
}

}  // namespace

Tensor reduce(const Tensor& x, int64_t axis, const Dilated& w, bool max) {
  const int64_t in = x.shape()[axis];
  // The taps that read the input for some output: j * rate - offset within
  // (-outputs, in). The others read padding for every output.
  const int64_t first =
      std::max<int64_t>(0, floor_div(w.offset - w.outputs, w.rate) + 1);
  const int64_t last =
      std::min(w.size - 1, floor_div(w.offset + in - 1, w.rate));
  const Tensor zero = zeros({}, x.dtype(), x.device());
  if (first > last) {  // every window reads padding only: 0, as in TF
    Shape out = x.shape();
    out[axis] = w.outputs;
    return zeros(out, x.dtype(), x.device());
  }
  Tensor acc;
  for (int64_t j = first; j <= last; ++j) {
    const Tensor tap = take(x, axis, w, j, zero);
    acc = !acc.defined() ? tap : max ? maximum(acc, tap) : acc + tap;
  }
  // Padding before every window's first real tap wins ties (it comes first
  // in the window); padding after loses them.
  if (max && first > 0) acc = maximum(zero, acc);
  if (max && last < w.size - 1) acc = maximum(acc, zero);
  return max ? acc : acc * (1.0 / static_cast<double>(w.size));
}

}  // namespace tapeflow::window
