// The fused sparse softmax cross entropy on the CPU: each row (in L1 for any
// usual class count) in three xsimd passes: its maximum, exp(x - max) into
// backprop with their sum, and backprop scaled to the softmax, less one at
// the label. Rows split across threads.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "core/creation_internal.hpp"
#include "core/dtype_dispatch.hpp"
#include "core/softmax_cross_entropy_math.hpp"
#include "cpu/parallel.hpp"
#include "cpu/xsimd_config.hpp"
#include "ops/nn/loss_ops.hpp"

namespace tapeflow::cpu {
namespace {

/** Maximum of x[0, n): -inf for none; NaN propagates through the sums. */
template <class T>
T row_max(const T* x, int64_t n) {
  using B = xsimd::batch<T>;
  constexpr int64_t W = B::size;
  T m = -std::numeric_limits<T>::infinity();
  int64_t i = 0;
  if (n >= W) {
    B v = B::load_unaligned(x);
    for (i = W; i + W <= n; i += W) v = xsimd::max(v, B::load_unaligned(x + i));
    alignas(64) T lanes[W];
    v.store_aligned(lanes);
    for (const T lane : lanes) m = std::max(m, lane);
  }
  for (; i < n; ++i) m = std::max(m, x[i]);
  return m;
}

/** e = exp(x - m) over [0, n); returns their sum. */
template <class T>
T exp_shifted(const T* x, T m, int64_t n, T* e) {
  using B = xsimd::batch<T>;
  constexpr int64_t W = B::size;
  B acc(T(0));
  int64_t i = 0;
  for (; i + W <= n; i += W) {
    const B v = xsimd::exp(B::load_unaligned(x + i) - B(m));
    v.store_unaligned(e + i);
    acc += v;
  }
  T sum = xsimd::hadd(acc);
  for (; i < n; ++i) {
    e[i] = std::exp(x[i] - m);
    sum += e[i];
  }
  return sum;
}

template <class T>
void run(const Tensor& logits, const std::vector<int64_t>& labels, Tensor& loss,
         Tensor& backprop) {
  using B = xsimd::batch<T>;
  constexpr int64_t W = B::size;
  const int64_t rows = logits.shape()[0], classes = logits.shape()[1];
  const T* x = logits.data<T>();
  T* pl = loss.data<T>();
  T* pb = backprop.data<T>();
  const int64_t grain =
      std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(classes, 1));
  parallel_for(rows, grain, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const T* xr = x + r * classes;
      T* br = pb + r * classes;
      const T m = row_max(xr, classes);
      const T sum = exp_shifted(xr, m, classes, br);
      const T inv = T(1) / sum;
      int64_t i = 0;
      for (; i + W <= classes; i += W)
        (B::load_unaligned(br + i) * B(inv)).store_unaligned(br + i);
      for (; i < classes; ++i) br[i] *= inv;
      const int64_t label = labels[r];
      const bool ok = label_in_range(label, classes);
      pl[r] = cross_entropy_loss(m, sum, ok ? xr[label] : T(0), ok);
      if (ok) br[label] -= T(1);
    }
  });
}

void sparse_softmax_cross_entropy(const SparseSoftmaxCrossEntropy& op,
                                  Inputs in, const Outputs& out) {
  const Tensor logits = materialize(in[0]);
  const std::vector<int64_t> labels = in[1].to_vector<int64_t>();
  dispatch_floating(logits.dtype(), op.name, [&](auto tag) {
    run<decltype(tag)>(logits, labels, out[0], out[1]);
  });
}

}  // namespace

void register_losses(Registry& r) {
  r.set<SparseSoftmaxCrossEntropy>(DeviceType::cpu,
                                   sparse_softmax_cross_entropy, "xsimd");
}

}  // namespace tapeflow::cpu
