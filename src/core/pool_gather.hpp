#pragma once
// Pooling gradients as gathers: an input element sums dy over the windows
// that hold it (avg) or chose it (max), visiting them in output order, the
// order in which the CPU's scatter adds into it; each sum is then the
// CPU's, and a GPU computes it in one thread without atomics. The window
// arithmetic is core/pool_window.hpp's.
#include <cstdint>

#include "core/pool_window.hpp"

namespace tapeflow {

/** Position (depth, row, column) of plane offset `j` of the input. */
TPF_HOST_DEVICE inline void pool_input_position(const PoolGeometry& g,
                                                int64_t j, int64_t (&x)[3]) {
  x[2] = j % g.in[2];
  x[1] = j / g.in[2] % g.in[1];
  x[0] = j / (g.in[2] * g.in[1]);
}

/**
 * The outputs whose windows hold input position x: along each axis a, the
 * o in [first[a], last[a]] (empty when first > last, as when the stride
 * skips x). Window o spans [o s - lo, o s - lo + k).
 */
struct PoolCover {
  int64_t first[3], last[3];
};

TPF_HOST_DEVICE inline PoolCover pool_cover(const PoolGeometry& g,
                                            const int64_t (&x)[3]) {
  PoolCover c;
  for (int a = 0; a < 3; ++a) {
    // o s - lo <= x  and  x < o s - lo + k, with o in [0, out).
    const int64_t hi = (x[a] + g.lo[a]) / g.s[a];  // x + lo >= 0
    const int64_t from = x[a] + g.lo[a] - g.k[a] + 1;
    const int64_t lo = from <= 0 ? 0 : (from + g.s[a] - 1) / g.s[a];
    c.first[a] = lo;
    c.last[a] = hi < g.out[a] - 1 ? hi : g.out[a] - 1;
  }
  return c;
}

/** Output index within a plane of output position (d, h, x). */
TPF_HOST_DEVICE inline int64_t pool_output_offset(const PoolGeometry& g,
                                                  int64_t d, int64_t h,
                                                  int64_t x) {
  return (d * g.out[1] + h) * g.out[2] + x;
}

/**
 * dx at plane offset `j` of plane `p` for max pooling: the sum, in output
 * order, of dy over the windows whose workspace entry points at j.
 */
template <class T>
TPF_HOST_DEVICE inline T max_pool_gathered_grad(const PoolGeometry& g,
                                                int64_t p, int64_t j,
                                                const T* dy,
                                                const int32_t* ws) {
  int64_t x[3];
  pool_input_position(g, j, x);
  const PoolCover c = pool_cover(g, x);
  T acc = 0;
  for (int64_t d = c.first[0]; d <= c.last[0]; ++d)
    for (int64_t h = c.first[1]; h <= c.last[1]; ++h)
      for (int64_t w = c.first[2]; w <= c.last[2]; ++w) {
        const int64_t pos[3] = {d, h, w};
        const int64_t i = p * g.out_size() + pool_output_offset(g, d, h, w);
        if (pool_window_element(g, pool_span(g, pos), ws[i]) == j) acc += dy[i];
      }
  return acc;
}

/**
 * dx at plane offset `j` of plane `p` for average pooling: the sum, in
 * output order, of dy / count over the windows holding j.
 */
template <class T>
TPF_HOST_DEVICE inline T avg_pool_gathered_grad(const PoolGeometry& g,
                                                int64_t p, int64_t j,
                                                const T* dy,
                                                bool count_include_pad) {
  int64_t x[3];
  pool_input_position(g, j, x);
  const PoolCover c = pool_cover(g, x);
  T acc = 0;
  for (int64_t d = c.first[0]; d <= c.last[0]; ++d)
    for (int64_t h = c.first[1]; h <= c.last[1]; ++h)
      for (int64_t w = c.first[2]; w <= c.last[2]; ++w) {
        const int64_t pos[3] = {d, h, w};
        const int64_t i = p * g.out_size() + pool_output_offset(g, d, h, w);
        acc += dy[i] / T(pool_span(g, pos).count(count_include_pad));
      }
  return acc;
}

}  // namespace tapeflow
