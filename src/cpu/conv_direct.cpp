// float64 convolution kernels: 1-3 spatial axes padded to three, one task
// per (batch, channel) or (out-channel, in-channel) row, so that every task
// writes its own output block and needs no atomics.
#include "cpu/conv_direct.hpp"

#include <algorithm>

#include "cpu/parallel.hpp"

namespace tapeflow::cpu {
namespace {

/** Sizes of one convolution with the spatial axes padded to three. */
struct Geometry {
  int64_t n, c, o, cg, og;  // batch, in/out channels, per group
  int64_t in[3], out[3], k[3], s[3], d[3], p[3];
  int64_t in_size = 1, out_size = 1, k_size = 1;
};

Geometry geometry(const ConvAttrs& a, const Shape& x, const Shape& w,
                  const Shape& y) {
  Geometry g;
  g.n = x[0];
  g.c = x[1];
  g.o = w[0];
  g.cg = w[1];
  g.og = w[0] / a.groups;
  const int64_t lead = 3 - a.spatial();
  for (int64_t j = 0; j < 3; ++j) {
    const int64_t i = j - lead;
    const bool real = i >= 0;
    g.in[j] = real ? x[i + 2] : 1;
    g.out[j] = real ? y[i + 2] : 1;
    g.k[j] = real ? w[i + 2] : 1;
    g.s[j] = real ? a.strides[i] : 1;
    g.d[j] = real ? a.dilations[i] : 1;
    g.p[j] = real ? a.pads_before[i] : 0;
    g.in_size *= g.in[j];
    g.out_size *= g.out[j];
    g.k_size *= g.k[j];
  }
  return g;
}

/**
 * Calls f(out_index, tap_index, in_index) for every output position and
 * filter tap whose input position lies inside the (unpadded) input.
 */
template <class F>
void for_taps(const Geometry& g, F&& f) {
  for (int64_t o0 = 0; o0 < g.out[0]; ++o0)
    for (int64_t k0 = 0; k0 < g.k[0]; ++k0) {
      const int64_t i0 = o0 * g.s[0] - g.p[0] + k0 * g.d[0];
      if (i0 < 0 || i0 >= g.in[0]) continue;
      for (int64_t o1 = 0; o1 < g.out[1]; ++o1)
        for (int64_t k1 = 0; k1 < g.k[1]; ++k1) {
          const int64_t i1 = o1 * g.s[1] - g.p[1] + k1 * g.d[1];
          if (i1 < 0 || i1 >= g.in[1]) continue;
          for (int64_t o2 = 0; o2 < g.out[2]; ++o2)
            for (int64_t k2 = 0; k2 < g.k[2]; ++k2) {
              const int64_t i2 = o2 * g.s[2] - g.p[2] + k2 * g.d[2];
              if (i2 < 0 || i2 >= g.in[2]) continue;
              f((o0 * g.out[1] + o1) * g.out[2] + o2,
                (k0 * g.k[1] + k1) * g.k[2] + k2,
                (i0 * g.in[1] + i1) * g.in[2] + i2);
            }
        }
    }
}

/** Rows per thread chunk so that a chunk holds about kParallelGrain taps. */
int64_t grain(int64_t per_row) {
  return std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(1, per_row));
}

const double* ptr(const Tensor& t) {
  return static_cast<const double*>(t.raw_data());
}

}  // namespace

void conv_direct_forward(const ConvAttrs& a, const Tensor& x, const Tensor& w,
                         Tensor& y) {
  const Geometry g = geometry(a, x.shape(), w.shape(), y.shape());
  const double *px = ptr(x), *pw = ptr(w);
  double* py = static_cast<double*>(y.raw_data());
  const int64_t work = g.out_size * g.k_size * g.cg;
  parallel_for(g.n * g.o, grain(work), [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      const int64_t n = row / g.o, o = row % g.o, group = o / g.og;
      double* yb = py + row * g.out_size;
      std::fill_n(yb, g.out_size, 0.0);
      for (int64_t ci = 0; ci < g.cg; ++ci) {
        const double* xb = px + (n * g.c + group * g.cg + ci) * g.in_size;
        const double* wb = pw + (o * g.cg + ci) * g.k_size;
        for_taps(g, [&](int64_t out, int64_t tap, int64_t in) {
          yb[out] += xb[in] * wb[tap];
        });
      }
    }
  });
}

void conv_direct_grad_input(const ConvAttrs& a, const Tensor& dy,
                            const Tensor& w, Tensor& dx) {
  const Geometry g = geometry(a, dx.shape(), w.shape(), dy.shape());
  const double *pdy = ptr(dy), *pw = ptr(w);
  double* pdx = static_cast<double*>(dx.raw_data());
  const int64_t work = g.out_size * g.k_size * g.og;
  parallel_for(g.n * g.c, grain(work), [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      const int64_t n = row / g.c, c = row % g.c;
      const int64_t group = c / g.cg, ci = c % g.cg;
      double* dxb = pdx + row * g.in_size;
      std::fill_n(dxb, g.in_size, 0.0);
      for (int64_t o = group * g.og; o < (group + 1) * g.og; ++o) {
        const double* dyb = pdy + (n * g.o + o) * g.out_size;
        const double* wb = pw + (o * g.cg + ci) * g.k_size;
        for_taps(g, [&](int64_t out, int64_t tap, int64_t in) {
          dxb[in] += dyb[out] * wb[tap];
        });
      }
    }
  });
}

void conv_direct_grad_filter(const ConvAttrs& a, const Tensor& x,
                             const Tensor& dy, Tensor& dw) {
  const Geometry g = geometry(a, x.shape(), dw.shape(), dy.shape());
  const double *px = ptr(x), *pdy = ptr(dy);
  double* pdw = static_cast<double*>(dw.raw_data());
  const int64_t work = g.out_size * g.k_size * g.n;
  parallel_for(g.o * g.cg, grain(work), [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      const int64_t o = row / g.cg, ci = row % g.cg, group = o / g.og;
      double* dwb = pdw + row * g.k_size;
      std::fill_n(dwb, g.k_size, 0.0);
      for (int64_t n = 0; n < g.n; ++n) {
        const double* xb = px + (n * g.c + group * g.cg + ci) * g.in_size;
        const double* dyb = pdy + (n * g.o + o) * g.out_size;
        for_taps(g, [&](int64_t out, int64_t tap, int64_t in) {
          dwb[tap] += xb[in] * dyb[out];
        });
      }
    }
  });
}

}  // namespace tapeflow::cpu
