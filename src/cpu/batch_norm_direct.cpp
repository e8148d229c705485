// Fused batch normalization and its gradient by direct loops over x seen as
// (N, C, S), one channel per task.
#include <cmath>
#include <vector>

#include "core/creation_internal.hpp"
#include "core/dtype_dispatch.hpp"
#include "cpu/nn_direct.hpp"
#include "cpu/parallel.hpp"

namespace tapeflow::cpu {
namespace {

Tensor dense(const Tensor& t) {
  return t.is_contiguous() ? t : materialize(t);
}

struct Dims {
  int64_t n, c, s;
};
Dims dims_of(const Tensor& x) {
  const int64_t n = x.shape()[0], c = x.shape()[1];
  return {n, c, n * c ? x.numel() / (n * c) : 0};
}

template <class T>
const T* ptr(const Tensor& t) {
  return static_cast<const T*>(t.raw_data());
}

}  // namespace

void batch_norm_direct(const FusedBatchNorm& op, Inputs in, Tensor& out) {
  const Tensor x = dense(in[0]), scale = dense(in[1]), offset = dense(in[2]),
               mean = dense(in[3]), var = dense(in[4]);
  const Dims d = dims_of(x);
  dispatch_floating(x.dtype(), op.name, [&](auto tag) {
    using T = decltype(tag);
    const T *px = ptr<T>(x), *ps = ptr<T>(scale), *po = ptr<T>(offset),
            *pm = ptr<T>(mean), *pv = ptr<T>(var);
    T* py = static_cast<T*>(out.raw_data());
    parallel_for(d.c, std::max<int64_t>(1, kParallelGrain / (d.n * d.s + 1)),
                 [&](int64_t c0, int64_t c1) {
                   for (int64_t c = c0; c < c1; ++c) {
                     const T a = ps[c] / std::sqrt(pv[c] + T(op.epsilon));
                     const T b = po[c] - pm[c] * a;
                     for (int64_t n = 0; n < d.n; ++n) {
                       const int64_t base = (n * d.c + c) * d.s;
                       for (int64_t i = 0; i < d.s; ++i)
                         py[base + i] = px[base + i] * a + b;
                     }
                   }
                 });
  });
}

void batch_norm_grad_direct(const BatchNormGrad& op, Inputs in, Tensor& out) {
  const Tensor x = dense(in[0]), dy = dense(in[1]), scale = dense(in[2]),
               mean = dense(in[3]), var = dense(in[4]);
  const Dims d = dims_of(x);
  dispatch_floating(x.dtype(), op.name, [&](auto tag) {
    using T = decltype(tag);
    const T *px = ptr<T>(x), *pdy = ptr<T>(dy), *ps = ptr<T>(scale),
            *pm = ptr<T>(mean), *pv = ptr<T>(var);
    T* pdx = static_cast<T*>(out.raw_data());
    T* pdscale = pdx + x.numel();
    T* pdoffset = pdscale + d.c;
    const T count = T(d.n * d.s);
    parallel_for(
        d.c, std::max<int64_t>(1, kParallelGrain / (d.n * d.s + 1)),
        [&](int64_t c0, int64_t c1) {
          for (int64_t c = c0; c < c1; ++c) {
            const T inv = T(1) / std::sqrt(pv[c] + T(op.epsilon));
            T sum_dy = 0, sum_dy_xhat = 0;
            for (int64_t n = 0; n < d.n; ++n) {
              const int64_t base = (n * d.c + c) * d.s;
              for (int64_t i = 0; i < d.s; ++i) {
                sum_dy += pdy[base + i];
                sum_dy_xhat += pdy[base + i] * (px[base + i] - pm[c]) * inv;
              }
            }
            pdscale[c] = sum_dy_xhat;
            pdoffset[c] = sum_dy;
            const T k = ps[c] * inv;
            for (int64_t n = 0; n < d.n; ++n) {
              const int64_t base = (n * d.c + c) * d.s;
              for (int64_t i = 0; i < d.s; ++i) {
                const int64_t j = base + i;
                if (!op.training) {
                  pdx[j] = pdy[j] * k;
                } else {
                  const T xhat = (px[j] - pm[c]) * inv;
                  pdx[j] = k * (pdy[j] - (sum_dy + xhat * sum_dy_xhat) / count);
                }
              }
            }
          }
        });
  });
}

}  // namespace tapeflow::cpu
