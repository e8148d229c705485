// Per-channel batch mean and biased variance of x seen as (N, C, S), in one
// pass over x: each task sums d = x - shift and d * d over a block of rows
// (shift = x[0, c, 0], so the variance keeps its digits when the mean is
// large against the spread). float32 rows are summed in float xsimd
// batches over short blocks and flushed into double accumulators.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "core/creation_internal.hpp"
#include "core/dtype_dispatch.hpp"
#include "cpu/nn_direct.hpp"
#include "cpu/parallel.hpp"
#include "cpu/xsimd_config.hpp"

namespace tapeflow::cpu {
namespace {

/** Elements summed in float lanes before a flush into double. */
constexpr int64_t kFlush = 1024;

struct Sums {
  double s = 0, q = 0;
};

/** Sum of (p[i] - shift) and of its square over n contiguous elements. */
template <class T>
Sums row_sums(const T* p, int64_t n, T shift) {
  using B = xsimd::batch<T>;
  constexpr int64_t W = B::size;
  Sums r;
  int64_t i = 0;
  const B sh(shift);
  while (n - i >= 2 * W) {
    const int64_t end =
        i + std::min<int64_t>(kFlush, (n - i) / (2 * W) * 2 * W);
    B s0(T(0)), s1(T(0)), q0(T(0)), q1(T(0));
    for (; i < end; i += 2 * W) {
      const B d0 = B::load_unaligned(p + i) - sh;
      const B d1 = B::load_unaligned(p + i + W) - sh;
      s0 += d0;
      s1 += d1;
      q0 = xsimd::fma(d0, d0, q0);
      q1 = xsimd::fma(d1, d1, q1);
    }
    alignas(64) T ls[W], lq[W];
    (s0 + s1).store_aligned(ls);
    (q0 + q1).store_aligned(lq);
    for (int64_t k = 0; k < W; ++k) {
      r.s += ls[k];
      r.q += lq[k];
    }
  }
  for (; i < n; ++i) {
    const double d = double(p[i]) - double(shift);
    r.s += d;
    r.q += d * d;
  }
  return r;
}

}  // namespace

void channel_moments(const Tensor& x_in, Tensor& mean, Tensor& variance) {
  const Tensor x = materialize(x_in);
  const int64_t n = x.shape()[0], c = x.shape()[1],
                s = n * c != 0 ? x.numel() / (n * c) : 0;
  if (c == 0) return;
  dispatch_floating(x.dtype(), "batch_moments", [&](auto tag) {
    using T = decltype(tag);
    const T* px = static_cast<const T*>(x.raw_data());
    T* pm = static_cast<T*>(mean.raw_data());
    T* pv = static_cast<T*>(variance.raw_data());
    if (n * s == 0) {
      std::fill_n(pm, c, std::numeric_limits<T>::quiet_NaN());
      std::fill_n(pv, c, std::numeric_limits<T>::quiet_NaN());
      return;
    }
    // Tasks are blocks of rows (n, c) in memory order, one sequential stream
    // each (per-channel tasks stride through memory and run slower); every
    // block keeps its own per-channel sums.
    const int64_t rows = n * c;
    const int64_t blocks = std::clamp<int64_t>(
        x.numel() / kParallelGrain, 1,
        std::min<int64_t>(rows, config::intra_op_threads()));
    const int64_t per = (rows + blocks - 1) / blocks;
    std::vector<Sums> part(static_cast<size_t>(c * blocks));
    parallel_for(blocks, 1, [&](int64_t b0, int64_t b1) {
      for (int64_t b = b0; b < b1; ++b) {
        const int64_t r1 = std::min(rows, (b + 1) * per);
        for (int64_t r = b * per; r < r1; ++r) {
          const int64_t ch = r % c;
          const Sums q = row_sums(px + r * s, s, px[ch * s]);
          part[b * c + ch].s += q.s;
          part[b * c + ch].q += q.q;
        }
      }
    });
    const double count = double(n * s);
    for (int64_t ch = 0; ch < c; ++ch) {
      Sums acc;
      for (int64_t b = 0; b < blocks; ++b) {
        acc.s += part[b * c + ch].s;
        acc.q += part[b * c + ch].q;
      }
      const double dm = acc.s / count;
      pm[ch] = T(double(px[ch * s]) + dm);
      pv[ch] = T(std::max(0.0, acc.q / count - dm * dm));
    }
  });
}

void batch_moments_direct(const BatchMoments&, Inputs in, const Outputs& out) {
  channel_moments(in[0], out[0], out[1]);
}

}  // namespace tapeflow::cpu
