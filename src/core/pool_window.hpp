#pragma once
// The window arithmetic of pooling, shared by the CPU kernels
// (cpu/pool_direct.cpp) and the CUDA ones, so that both pick the same
// maximum and write the same workspace. A pooling runs over (N*C) planes of
// up to three spatial axes; fewer axes are padded in front with extent 1.
#include <cstdint>

#include "core/host_device.hpp"

namespace tapeflow {

/** Extents of one pooling: planes, input and output axes, window, padding. */
struct PoolGeometry {
  int64_t planes = 1;
  int64_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1};
  int64_t k[3] = {1, 1, 1}, s[3] = {1, 1, 1};
  int64_t lo[3] = {0, 0, 0}, hi[3] = {0, 0, 0};
  TPF_HOST_DEVICE int64_t in_size() const { return in[0] * in[1] * in[2]; }
  TPF_HOST_DEVICE int64_t out_size() const { return out[0] * out[1] * out[2]; }
};

/**
 * One window: its first element (which may lie in the padding), the part
 * [b, e) inside the input, and its element counts with and without padding
 * (the low padding and at most the high padding; a window reaching past the
 * high padding, as with VALID, does not count the excess).
 */
struct PoolSpan {
  int64_t start[3], b[3], e[3];
  // The padded window's size in double: with count_include_pad, three
  // windows of 2^22 (or two of 2^32) taps would pass int64, dividing by 0.
  double padded = 1;
  int64_t valid = 1;
  /** The divisor of average pooling. */
  TPF_HOST_DEVICE double count(bool include_pad) const {
    return include_pad ? padded : static_cast<double>(valid);
  }
};

/** Output position (depth, row, column) of output `o` within a plane. */
TPF_HOST_DEVICE inline void pool_output_position(const PoolGeometry& g,
                                                 int64_t o, int64_t (&i)[3]) {
  i[2] = o % g.out[2];
  i[1] = o / g.out[2] % g.out[1];
  i[0] = o / (g.out[2] * g.out[1]);
}

/** The window of output position `i`. */
TPF_HOST_DEVICE inline PoolSpan pool_span(const PoolGeometry& g,
                                          const int64_t (&i)[3]) {
  PoolSpan w;
  for (int a = 0; a < 3; ++a) {
    const int64_t start = i[a] * g.s[a] - g.lo[a], stop = start + g.k[a];
    const int64_t padded_stop = g.in[a] + g.hi[a];
    w.start[a] = start;
    w.b[a] = start > 0 ? start : 0;
    w.e[a] = stop < g.in[a] ? stop : g.in[a];
    w.padded *=
        static_cast<double>((stop < padded_stop ? stop : padded_stop) - start);
    w.valid *= w.e[a] - w.b[a];
  }
  return w;
}

/** Offset within its plane of input element (d, h, x). */
TPF_HOST_DEVICE inline int64_t pool_plane_offset(const PoolGeometry& g,
                                                 int64_t d, int64_t h,
                                                 int64_t x) {
  return (d * g.in[1] + h) * g.in[2] + x;
}

/**
 * Offset within the plane of the window's first maximum, or of its first
 * NaN (a window holding NaN pools to NaN, as argmax does): the scan is
 * row-major, and an equal value does not replace the best. -1 for a window
 * wholly in the padding, which pooling's shape rules never make.
 */
template <class T>
TPF_HOST_DEVICE inline int64_t pool_argmax(const PoolGeometry& g,
                                           const T* plane, const PoolSpan& w) {
  T best{};  // set by the first element (at < 0)
  int64_t at = -1;
  for (int64_t d = w.b[0]; d < w.e[0]; ++d)
    for (int64_t h = w.b[1]; h < w.e[1]; ++h)
      for (int64_t x = w.b[2]; x < w.e[2]; ++x) {
        const int64_t j = pool_plane_offset(g, d, h, x);
        const T v = plane[j];
        if (v != v) return j;
        if (at < 0 || v > best) best = v, at = j;
      }
  return at;
}

/** Sum of the window's elements inside the input, added to `acc`. */
template <class T>
TPF_HOST_DEVICE inline void pool_sum(const PoolGeometry& g, const T* plane,
                                     const PoolSpan& w, T& acc) {
  for (int64_t d = w.b[0]; d < w.e[0]; ++d)
    for (int64_t h = w.b[1]; h < w.e[1]; ++h)
      for (int64_t x = w.b[2]; x < w.e[2]; ++x)
        acc += plane[pool_plane_offset(g, d, h, x)];
}

/**
 * The max-pool workspace's value for the element at plane offset `j`: its
 * index in row-major order over the whole window, padding included (the
 * convention of oneDNN's workspace).
 */
TPF_HOST_DEVICE inline int32_t pool_window_index(const PoolGeometry& g,
                                                 const PoolSpan& w, int64_t j) {
  const int64_t d = j / (g.in[1] * g.in[2]), h = j / g.in[2] % g.in[1],
                x = j % g.in[2];
  return static_cast<int32_t>(
      ((d - w.start[0]) * g.k[1] + h - w.start[1]) * g.k[2] + x - w.start[2]);
}

/** Plane offset of window element `k` (a workspace value). */
TPF_HOST_DEVICE inline int64_t pool_window_element(const PoolGeometry& g,
                                                   const PoolSpan& w,
                                                   int64_t k) {
  return pool_plane_offset(g, w.start[0] + k / (g.k[1] * g.k[2]),
                           w.start[1] + k / g.k[2] % g.k[1],
                           w.start[2] + k % g.k[2]);
}

/**
 * TensorFlow's max_pool_with_argmax index of plane offset `j` in plane `p`
 * of a 2-d pooling with `channels` channels: the flattened NHWC position
 * (y * W + x) * C + c, plus n * H * W * C when `include_batch`.
 */
TPF_HOST_DEVICE inline int64_t pool_tf_argmax(const PoolGeometry& g, int64_t p,
                                              int64_t j, int64_t channels,
                                              bool include_batch) {
  const int64_t n = p / channels, c = p % channels;
  return j * channels + c + (include_batch ? n * g.in_size() * channels : 0);
}

}  // namespace tapeflow
