#pragma once
// Depthwise convolutions (one input channel per group, `og` out-channels
// each: design CUDA.md §4 "Conv", path 1) as direct loops, written once for
// nvcc and g++: the CUDA kernels call these per thread (and per block for
// the filter gradient's reduction), CI's host test calls them over the whole
// grid and compares with the direct float64 kernels.
//
// Operands are read through ConvGeometry's strides, so NHWC views cost no
// copy. Every output element has exactly one writer and sums in a fixed
// order: no atomics, the same result on every run.
#include <algorithm>
#include <cstdint>

#include "core/conv_index.hpp"

namespace tapeflow {

/**
 * Forward: y element e, row-major over (image, out-channel, position), is
 * the dot product of its channel's window with its filter, plus the bias
 * of its out-channel when given.
 */
template <class T>
TPF_HOST_DEVICE void depthwise_forward(const ConvGeometry& g, const T* x,
                                       const T* w, const T* bias,
                                       int64_t bias_stride, T* y, int64_t e) {
  const int64_t positions = g.out_size(), taps = g.k_size();
  const int64_t p = e % positions, o = e / positions % g.o;
  const int64_t image = e / (positions * g.o), c = o / g.og;
  T sum = bias ? bias[o * bias_stride] : T(0);
  for (int64_t t = 0; t < taps; ++t) {
    const int64_t at = g.x_at_window(image, c, p, t);
    if (at >= 0) sum += x[at] * w[g.w_offset(o, 0, t)];
  }
  y[g.y_offset(image, o, p)] = sum;
}

/**
 * Input gradient as a gather: dx element e, row-major over (image,
 * channel, input position), sums dy·w over its channel's out-channels and
 * the taps through which some output position reads it.
 */
template <class T>
TPF_HOST_DEVICE void depthwise_grad_input(const ConvGeometry& g, const T* dy,
                                          const T* w, T* dx, int64_t e) {
  const int64_t inputs = g.in_size(), taps = g.k_size();
  const int64_t i = e % inputs, c = e / inputs % g.c;
  const int64_t image = e / (inputs * g.c);
  T sum = T(0);
  for (int64_t o = c * g.og; o < (c + 1) * g.og; ++o)
    for (int64_t t = 0; t < taps; ++t) {
      const int64_t p = g.out_reading(i, t);
      if (p >= 0) sum += dy[g.y_offset(image, o, p)] * w[g.w_offset(o, 0, t)];
    }
  dx[g.x_offset(image, c, i)] = sum;
}

/**
 * The filter gradient's layout of work: dw row r = o·∏k + tap is a sum over
 * the N·P (image, position) pairs, cut into `slices` contiguous ranges. A
 * block of kThreads threads reduces one (row, slice); a second pass adds a
 * row's slices in order.
 */
struct DepthwiseFilterWork {
  static constexpr int kThreads = 256;
  int64_t rows = 0, length = 0, slices = 1;
};

/**
 * Slices per row: enough (row, slice) blocks to fill a large GPU, each
 * slice long enough (kMinSlice) that its threads have several terms each.
 */
inline DepthwiseFilterWork depthwise_filter_work(const ConvGeometry& g) {
  constexpr int64_t kTargetBlocks = 1024, kMinSlice = 2048;
  DepthwiseFilterWork work;
  work.rows = g.o * g.k_size();
  work.length = g.n * g.out_size();
  const int64_t wanted =
      (kTargetBlocks + work.rows - 1) / std::max<int64_t>(1, work.rows);
  work.slices = std::clamp<int64_t>(
      std::min(wanted, (work.length + kMinSlice - 1) / kMinSlice), 1,
      kTargetBlocks);
  return work;
}

/** Term j of dw row `row`'s sum: dy(image, o, p)·x through the tap. */
template <class T>
TPF_HOST_DEVICE T depthwise_filter_term(const ConvGeometry& g, const T* x,
                                        const T* dy, int64_t row, int64_t j) {
  const int64_t taps = g.k_size(), positions = g.out_size();
  const int64_t o = row / taps, t = row % taps;
  const int64_t image = j / positions, p = j % positions;
  const int64_t at = g.x_at_window(image, o / g.og, p, t);
  return at < 0 ? T(0) : dy[g.y_offset(image, o, p)] * x[at];
}

/**
 * One block of the filter gradient's first pass: its threads sum strided
 * terms of slice `slice` of row `row`, then a tree in shared memory
 * (`scratch`, kThreads entries) adds them in a fixed order, and thread 0
 * writes partials[row·slices + slice]. The Block is conv_tile.hpp's: a
 * thread's state is its running sum.
 */
template <class T, class Block>
TPF_HOST_DEVICE void depthwise_filter_block(const ConvGeometry& g, const T* x,
                                            const T* dy,
                                            const DepthwiseFilterWork& work,
                                            int64_t row, int64_t slice,
                                            T* scratch, T* partials,
                                            Block& block) {
  constexpr int kThreads = DepthwiseFilterWork::kThreads;
  const SplitK split{work.length, work.slices};
  const int64_t begin = split.begin(slice), end = split.end(slice);
  block.for_each_thread([&](int t, T& sum) {
    sum = T(0);
    for (int64_t j = begin + t; j < end; j += kThreads)
      sum += depthwise_filter_term(g, x, dy, row, j);
    scratch[t] = sum;
  });
  block.sync();
  for (int half = kThreads / 2; half > 0; half /= 2) {
    block.for_each_thread([&](int t, T&) {
      if (t < half) scratch[t] += scratch[t + half];
    });
    block.sync();
  }
  block.for_each_thread([&](int t, T&) {
    if (t == 0) partials[row * work.slices + slice] = scratch[0];
  });
}

/** Second pass: dw row `row` is the sum of its slices, in slice order. */
template <class T>
TPF_HOST_DEVICE void depthwise_filter_sum(const ConvGeometry& g,
                                          const DepthwiseFilterWork& work,
                                          const T* partials, T* dw,
                                          int64_t row) {
  T sum = T(0);
  for (int64_t s = 0; s < work.slices; ++s)
    sum += partials[row * work.slices + s];
  const int64_t taps = g.k_size();
  dw[g.w_offset(row / taps, 0, row % taps)] = sum;
}

}  // namespace tapeflow
