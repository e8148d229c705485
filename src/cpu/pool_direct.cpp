// Pooling by direct loops over (N*C) planes of up to three spatial axes
// (fewer axes are padded in front with extent 1). Ties in max pooling go to
// the first maximum in row-major window order, and a window holding NaN
// pools to its first NaN (as argmax); the max-pool workspace holds that
// element's index within the whole window (see MaxPool).
#include <array>
#include <limits>

#include "core/creation_internal.hpp"
#include "core/dtype_dispatch.hpp"
#include "cpu/nn_direct.hpp"
#include "cpu/parallel.hpp"

namespace tapeflow::cpu {
namespace {

using A3 = std::array<int64_t, 3>;

struct Geo {
  int64_t planes = 1;
  A3 in{1, 1, 1}, out{1, 1, 1}, k{1, 1, 1}, s{1, 1, 1}, lo{}, hi{};
  int64_t in_size() const { return in[0] * in[1] * in[2]; }
  int64_t out_size() const { return out[0] * out[1] * out[2]; }
};

Geo geometry(const PoolWindow& w, const Shape& x) {
  Geo g;
  const int64_t nd = w.ksize.size(), off = 3 - nd;
  const Shape o = w.output_shape(x);
  g.planes = x[0] * x[1];
  for (int64_t i = 0; i < nd; ++i) {
    g.in[off + i] = x[2 + i];
    g.out[off + i] = o[2 + i];
    g.k[off + i] = w.ksize[i];
    g.s[off + i] = w.strides[i];
    g.lo[off + i] = w.pad_lo[i];
    g.hi[off + i] = w.pad_hi[i];
  }
  return g;
}

/**
 * One window: its first element (which may lie in the padding), the part
 * inside the input, and its size with padding.
 */
struct Window {
  A3 start, b, e;
  int64_t padded = 1, valid = 1;
};

/** Calls f(plane, output index, window) for every window, planes parallel. */
template <class F>
void over_windows(const Geo& g, F&& f) {
  const int64_t work =
      std::max<int64_t>(1, g.out_size() * g.k[0] * g.k[1] * g.k[2]);
  parallel_for(g.planes, std::max<int64_t>(1, kParallelGrain / work),
               [&](int64_t begin, int64_t end) {
                 for (int64_t p = begin; p < end; ++p) {
                   int64_t o = 0;
                   A3 i;
                   for (i[0] = 0; i[0] < g.out[0]; ++i[0])
                     for (i[1] = 0; i[1] < g.out[1]; ++i[1])
                       for (i[2] = 0; i[2] < g.out[2]; ++i[2], ++o) {
                         Window w;
                         for (int a = 0; a < 3; ++a) {
                           const int64_t start = i[a] * g.s[a] - g.lo[a];
                           const int64_t stop = start + g.k[a];
                           w.start[a] = start;
                           w.b[a] = std::max<int64_t>(start, 0);
                           w.e[a] = std::min(stop, g.in[a]);
                           w.padded *=
                               std::min(stop, g.in[a] + g.hi[a]) - start;
                           w.valid *= w.e[a] - w.b[a];
                         }
                         f(p, o, w);
                       }
                 }
               });
}

/** Offset within the plane of the window's first maximum or first NaN. */
template <class T>
int64_t argmax_in(const Geo& g, const T* plane, const Window& w) {
  T best = -std::numeric_limits<T>::infinity();
  int64_t at = -1;
  for (int64_t d = w.b[0]; d < w.e[0]; ++d)
    for (int64_t h = w.b[1]; h < w.e[1]; ++h)
      for (int64_t x = w.b[2]; x < w.e[2]; ++x) {
        const int64_t j = (d * g.in[1] + h) * g.in[2] + x;
        const T v = plane[j];
        if (v != v) return j;
        if (at < 0 || v > best) best = v, at = j;
      }
  return at;
}

/** Offset within the plane of element `k` of the window (row-major). */
int64_t plane_offset(const Geo& g, const Window& w, int64_t k) {
  const int64_t d = w.start[0] + k / (g.k[1] * g.k[2]),
                h = w.start[1] + k / g.k[2] % g.k[1],
                x = w.start[2] + k % g.k[2];
  return (d * g.in[1] + h) * g.in[2] + x;
}

/** Index within the window of the element at plane offset `j`. */
int32_t window_index(const Geo& g, const Window& w, int64_t j) {
  const int64_t d = j / (g.in[1] * g.in[2]), h = j / g.in[2] % g.in[1],
                x = j % g.in[2];
  return static_cast<int32_t>(
      ((d - w.start[0]) * g.k[1] + h - w.start[1]) * g.k[2] + x - w.start[2]);
}

template <class T>
void sum_window(const Geo& g, const T* plane, const Window& w, T& acc) {
  for (int64_t d = w.b[0]; d < w.e[0]; ++d)
    for (int64_t h = w.b[1]; h < w.e[1]; ++h)
      for (int64_t x = w.b[2]; x < w.e[2]; ++x)
        acc += plane[(d * g.in[1] + h) * g.in[2] + x];
}

template <class T>
void spread_window(const Geo& g, T* plane, const Window& w, T v) {
  for (int64_t d = w.b[0]; d < w.e[0]; ++d)
    for (int64_t h = w.b[1]; h < w.e[1]; ++h)
      for (int64_t x = w.b[2]; x < w.e[2]; ++x)
        plane[(d * g.in[1] + h) * g.in[2] + x] += v;
}

}  // namespace

void max_pool_direct(const MaxPool& op, Inputs in, const Outputs& outs) {
  Tensor& out = outs[0];
  const Tensor x = materialize(in[0]);
  const Geo g = geometry(op.w, x.shape());
  int32_t* pws =
      op.with_workspace ? static_cast<int32_t*>(outs[1].raw_data()) : nullptr;
  dispatch_floating(x.dtype(), op.name, [&](auto tag) {
    using T = decltype(tag);
    const T* px = static_cast<const T*>(x.raw_data());
    T* py = static_cast<T*>(out.raw_data());
    over_windows(g, [&](int64_t p, int64_t o, const Window& w) {
      const T* plane = px + p * g.in_size();
      const int64_t at = argmax_in(g, plane, w);
      py[p * g.out_size() + o] = plane[at];
      if (pws) pws[p * g.out_size() + o] = window_index(g, w, at);
    });
  });
}

void max_pool_argmax_direct(const MaxPoolArgmax& op, Inputs in,
                            const Outputs& outs) {
  const Tensor ws = materialize(in[0]);
  const Geo g = geometry(op.w, op.input_shape);
  const int64_t channels = op.input_shape[1];
  const int32_t* pws = static_cast<const int32_t*>(ws.raw_data());
  int64_t* pi = static_cast<int64_t*>(outs[0].raw_data());
  over_windows(g, [&](int64_t p, int64_t o, const Window& w) {
    const int64_t i = p * g.out_size() + o;
    const int64_t n = p / channels, c = p % channels;
    const int64_t batch =
        op.include_batch_in_index ? n * g.in_size() * channels : 0;
    pi[i] = plane_offset(g, w, pws[i]) * channels + c + batch;
  });
}

void avg_pool_direct(const AvgPool& op, Inputs in, const Outputs& outs) {
  Tensor& out = outs[0];
  const Tensor x = materialize(in[0]);
  const Geo g = geometry(op.w, x.shape());
  dispatch_floating(x.dtype(), op.name, [&](auto tag) {
    using T = decltype(tag);
    const T* px = static_cast<const T*>(x.raw_data());
    T* py = static_cast<T*>(out.raw_data());
    over_windows(g, [&](int64_t p, int64_t o, const Window& w) {
      T acc = 0;
      sum_window(g, px + p * g.in_size(), w, acc);
      py[p * g.out_size() + o] =
          acc / T(op.count_include_pad ? w.padded : w.valid);
    });
  });
}

void max_pool_scatter_direct(const MaxPoolScatter& op, Inputs in,
                             const Outputs& outs) {
  Tensor& out = outs[0];
  const Tensor dy = materialize(in[0]), ws = materialize(in[1]);
  const Geo g = geometry(op.w, op.input_shape);
  const int32_t* pws = static_cast<const int32_t*>(ws.raw_data());
  dispatch_floating(dy.dtype(), op.name, [&](auto tag) {
    using T = decltype(tag);
    const T* pdy = static_cast<const T*>(dy.raw_data());
    T* pdx = static_cast<T*>(out.raw_data());
    std::fill_n(pdx, out.numel(), T(0));
    over_windows(g, [&](int64_t p, int64_t o, const Window& w) {
      const int64_t i = p * g.out_size() + o;
      pdx[p * g.in_size() + plane_offset(g, w, pws[i])] += pdy[i];
    });
  });
}

void max_pool_gather_direct(const MaxPoolGather& op, Inputs in,
                            const Outputs& outs) {
  Tensor& out = outs[0];
  const Tensor gx = materialize(in[0]), ws = materialize(in[1]);
  const Geo g = geometry(op.w, gx.shape());
  const int32_t* pws = static_cast<const int32_t*>(ws.raw_data());
  dispatch_floating(gx.dtype(), op.name, [&](auto tag) {
    using T = decltype(tag);
    const T* pg = static_cast<const T*>(gx.raw_data());
    T* py = static_cast<T*>(out.raw_data());
    over_windows(g, [&](int64_t p, int64_t o, const Window& w) {
      const int64_t i = p * g.out_size() + o;
      py[i] = pg[p * g.in_size() + plane_offset(g, w, pws[i])];
    });
  });
}

void avg_pool_grad_direct(const AvgPoolGrad& op, Inputs in,
                          const Outputs& outs) {
  Tensor& out = outs[0];
  const Tensor dy = materialize(in[0]);
  const Geo g = geometry(op.w, op.input_shape);
  dispatch_floating(dy.dtype(), op.name, [&](auto tag) {
    using T = decltype(tag);
    const T* pdy = static_cast<const T*>(dy.raw_data());
    T* pdx = static_cast<T*>(out.raw_data());
    std::fill_n(pdx, out.numel(), T(0));
    over_windows(g, [&](int64_t p, int64_t o, const Window& w) {
      const T v = pdy[p * g.out_size() + o] /
                  T(op.count_include_pad ? w.padded : w.valid);
      spread_window(g, pdx + p * g.in_size(), w, v);
    });
  });
}

}  // namespace tapeflow::cpu
