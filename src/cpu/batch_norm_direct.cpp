// Fused batch normalization and its gradient over x seen as (N, C, S), in
// xsimd batches along the contiguous S rows, for every dtype; outputs over
// 8 MiB bypass the cache (store_row). The forward walks rows (n, c) in memory
// order, one sequential stream per thread (tasks per channel stride through
// memory and ran slower). The gradient is an affine map of (dy, x) per
// channel once two channel sums are known; with enough channels and long
// rows it takes the sums and the map channel by channel, so that the second
// pass finds the channel's rows in the cache. oneDNN 2.6 loses on plain NCHW:
// its ncsp_bnorm is slow, and its blocked bnorm_jit needs reorders that cost
// more than the kernel (64x64x56x56 training forward and gradient, 1 thread:
// 16 ms here, 15-17 ms for oneDNN on data already blocked, 47 ms with
// reorders).
#include <algorithm>
#include <cmath>
#include <vector>

#include "core/creation_internal.hpp"
#include "core/dtype_dispatch.hpp"
#include "cpu/elementwise_rows.hpp"
#include "cpu/nn_direct.hpp"
#include "cpu/parallel.hpp"

namespace tapeflow::cpu {
namespace {

struct Dims {
  int64_t n, c, s;
};
Dims dims_of(const Tensor& x) {
  const int64_t n = x.shape()[0], c = x.shape()[1];
  return {n, c, n != 0 && c != 0 ? x.numel() / (n * c) : 0};
}

template <class T>
const T* ptr(const Tensor& t) {
  return static_cast<const T*>(t.raw_data());
}

/** Elements summed in T lanes before a flush into double. */
constexpr int64_t kFlush = 1024;

/** Sum of dy and of dy * (x - mean) over one channel's rows. */
struct GradSums {
  double dy = 0, dy_xc = 0;
};

template <class T>
GradSums row_sums(const T* dy, const T* x, int64_t n, T mean) {
  using B = xsimd::batch<T>;
  constexpr int64_t W = B::size;
  GradSums r;
  const B m(mean);
  int64_t i = 0;
  while (n - i >= W) {
    const int64_t end = i + std::min<int64_t>(kFlush, (n - i) / W * W);
    B s(T(0)), q(T(0));
    for (; i < end; i += W) {
      const B g = B::load_unaligned(dy + i);
      s += g;
      q = xsimd::fma(g, B::load_unaligned(x + i) - m, q);
    }
    r.dy += double(xsimd::hadd(s));
    r.dy_xc += double(xsimd::hadd(q));
  }
  for (; i < n; ++i) {
    r.dy += double(dy[i]);
    r.dy_xc += double(dy[i]) * (double(x[i]) - double(mean));
  }
  return r;
}

/** out[i] = a * u[i] + b * v[i] + c over one row (v null: b ignored). */
template <class T>
void affine_row(T* out, const T* u, const T* v, int64_t n, T a, T b, T c,
                bool streaming) {
  using B = xsimd::batch<T>;
  const B va(a), vb(b), vc(c);
  if (!v)
    return store_row<T>(
        out, n, streaming,
        [&](int64_t i) { return xsimd::fma(B::load_unaligned(u + i), va, vc); },
        [&](int64_t i) { return u[i] * a + c; });
  store_row<T>(
      out, n, streaming,
      [&](int64_t i) {
        return xsimd::fma(B::load_unaligned(u + i), va,
                          xsimd::fma(B::load_unaligned(v + i), vb, vc));
      },
      [&](int64_t i) { return u[i] * a + v[i] * b + c; });
}

}  // namespace

void batch_norm_direct(const FusedBatchNorm& op, Inputs in,
                       const Outputs& outs) {
  Tensor& out = outs[0];
  const Tensor x = materialize(in[0]), scale = materialize(in[1]),
               offset = materialize(in[2]);
  // Training normalizes with the batch's moments; inference with the given
  // statistics, which come back as outputs 1 and 2.
  if (op.training) {
    channel_moments(x, outs[1], outs[2]);
  } else {
    write_into(outs[1], in[3], op.name);
    write_into(outs[2], in[4], op.name);
  }
  const Tensor mean = outs[1], var = outs[2];
  const Dims d = dims_of(x);
  dispatch_floating(x.dtype(), op.name, [&](auto tag) {
    using T = decltype(tag);
    const T *px = ptr<T>(x), *ps = ptr<T>(scale), *po = ptr<T>(offset),
            *pm = ptr<T>(mean), *pv = ptr<T>(var);
    T* py = static_cast<T*>(out.raw_data());
    const bool streaming = out.numel() * int64_t(sizeof(T)) >= kStreamingBytes;
    std::vector<T> a(d.c), b(d.c);
    for (int64_t c = 0; c < d.c; ++c) {
      a[c] = ps[c] / std::sqrt(pv[c] + T(op.epsilon));
      b[c] = po[c] - pm[c] * a[c];
    }
    // Rows in memory order: one sequential stream per thread.
    parallel_for(d.n * d.c, std::max<int64_t>(1, kParallelGrain / (d.s + 1)),
                 [&](int64_t r0, int64_t r1) {
                   for (int64_t r = r0; r < r1; ++r) {
                     const int64_t c = r % d.c;
                     affine_row<T>(py + r * d.s, px + r * d.s, nullptr, d.s,
                                   a[c], T(0), b[c], streaming);
                   }
                 });
  });
}

void batch_norm_grad_direct(const BatchNormGrad& op, Inputs in,
                            const Outputs& outs) {
  const Tensor x = materialize(in[0]), dy = materialize(in[1]),
               scale = materialize(in[2]), mean = materialize(in[3]),
               var = materialize(in[4]);
  const Dims d = dims_of(x);
  dispatch_floating(x.dtype(), op.name, [&](auto tag) {
    using T = decltype(tag);
    const T *px = ptr<T>(x), *pdy = ptr<T>(dy), *ps = ptr<T>(scale),
            *pm = ptr<T>(mean), *pv = ptr<T>(var);
    T* pdx = static_cast<T*>(outs[0].raw_data());
    T* pdscale = static_cast<T*>(outs[1].raw_data());
    T* pdoffset = static_cast<T*>(outs[2].raw_data());
    const bool streaming = x.numel() * int64_t(sizeof(T)) >= kStreamingBytes;
    // Training: dx = k (dy - (sum dy + xhat sum dy xhat) / count) with
    // xhat = (x - mean) inv, i.e. dx = k dy + a x + b per channel.
    const double count = double(d.n * d.s);
    struct Coef {
      T k, a, b;
    };
    auto coef = [&](int64_t c, const GradSums& sum) {
      const double inv = 1.0 / std::sqrt(double(pv[c]) + op.epsilon);
      const double kc = double(ps[c]) * inv;
      const double ac = op.training ? -kc * inv * inv * sum.dy_xc / count : 0.0;
      pdscale[c] = T(sum.dy_xc * inv);
      pdoffset[c] = T(sum.dy);
      return Coef{
          T(kc), T(ac),
          T(op.training ? -kc * sum.dy / count - ac * double(pm[c]) : 0.0)};
    };
    auto dx_row = [&](int64_t r, const Coef& f) {
      affine_row<T>(pdx + r * d.s, pdy + r * d.s, px + r * d.s, d.s, f.k, f.a,
                    f.b, streaming);
    };
    const int threads = config::intra_op_threads();
    if (d.c >= 4 * threads && d.s * int64_t(sizeof(T)) >= 1024) {
      // Channels split across threads (four or more each, so the split
      // stays even), both passes over one channel's rows in turn: the
      // second reads them from the cache, not from memory. Rows of 1 KiB or
      // more keep the strided visits streaming. 64x64x56x56, 2 threads,
      // memory-bound: 8.7 ms against 11.4 ms for the passes below, which
      // read x and dy from memory twice; 1 thread: no slower.
      parallel_for(d.c, 1, [&](int64_t c0, int64_t c1) {
        for (int64_t c = c0; c < c1; ++c) {
          GradSums sum;
          for (int64_t r = c; r < d.n * d.c; r += d.c) {
            const GradSums q =
                row_sums(pdy + r * d.s, px + r * d.s, d.s, pm[c]);
            sum.dy += q.dy;
            sum.dy_xc += q.dy_xc;
          }
          const Coef f = coef(c, sum);
          for (int64_t r = c; r < d.n * d.c; r += d.c) dx_row(r, f);
        }
      });
      return;
    }
    // Both passes walk rows (n, c) in memory order, one sequential stream per
    // thread; the first keeps per-channel sums per block of rows.
    const int64_t rows = d.n * d.c;
    const int64_t blocks = std::clamp<int64_t>(
        x.numel() / kParallelGrain, 1, std::min<int64_t>(rows, threads));
    const int64_t per = (rows + blocks - 1) / blocks;
    std::vector<GradSums> part(static_cast<size_t>(d.c * blocks));
    parallel_for(blocks, 1, [&](int64_t b0, int64_t b1) {
      for (int64_t b = b0; b < b1; ++b)
        for (int64_t r = b * per; r < std::min(rows, (b + 1) * per); ++r) {
          const GradSums q =
              row_sums(pdy + r * d.s, px + r * d.s, d.s, pm[r % d.c]);
          part[b * d.c + r % d.c].dy += q.dy;
          part[b * d.c + r % d.c].dy_xc += q.dy_xc;
        }
    });
    std::vector<Coef> f(d.c);
    for (int64_t c = 0; c < d.c; ++c) {
      GradSums sum;
      for (int64_t blk = 0; blk < blocks; ++blk) {
        sum.dy += part[blk * d.c + c].dy;
        sum.dy_xc += part[blk * d.c + c].dy_xc;
      }
      f[c] = coef(c, sum);
    }
    parallel_for(rows, std::max<int64_t>(1, kParallelGrain / (d.s + 1)),
                 [&](int64_t r0, int64_t r1) {
                   for (int64_t r = r0; r < r1; ++r) dx_row(r, f[r % d.c]);
                 });
  });
}

void register_norm(Registry& r) {
  r.set<FusedBatchNorm>(DeviceType::cpu, batch_norm_direct, "xsimd");
  r.set<BatchNormGrad>(DeviceType::cpu, batch_norm_grad_direct, "xsimd");
  r.set<BatchMoments>(DeviceType::cpu, batch_moments_direct, "xsimd");
}

}  // namespace tapeflow::cpu
