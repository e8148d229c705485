#pragma once
// Batch norm's per-channel arithmetic, shared by the CUDA kernels
// (cuda/norm.cu) and checked against the CPU's (cpu/batch_norm_direct.cpp)
// in tests/test_device_math.cpp: the forward's affine map, the gradient's
// coefficients from two channel sums, and how a channel's N*S elements split
// into contiguous chunks for a channel x split grid.
#include <cmath>
#include <cstdint>

#include "core/host_device.hpp"

namespace tapeflow {

/**
 * x seen as (N, C, S): every axis but 1. Element j in [0, N*S) of channel
 * c lies at offset (j / S * C + c) * S + j % S; the split grid gives each
 * of `splits` blocks of a channel the chunk [p * chunk, (p + 1) * chunk).
 */
struct ChannelSplit {
  int64_t n = 0, c = 0, s = 0, splits = 1, chunk = 0;

  TPF_HOST_DEVICE int64_t per_channel() const { return n * s; }
  TPF_HOST_DEVICE int64_t offset(int64_t channel, int64_t j) const {
    return (j / s * c + channel) * s + j % s;
  }
  TPF_HOST_DEVICE int64_t begin(int64_t part) const { return part * chunk; }
  TPF_HOST_DEVICE int64_t end(int64_t part) const {
    const int64_t e = (part + 1) * chunk;
    return e < per_channel() ? e : per_channel();
  }
};

/**
 * The split of a channel's elements over blocks of `threads` threads: about
 * `target_blocks` blocks in all, each with at least 8 elements a thread. It
 * depends on the shape alone, so every run reduces in the same tree.
 */
inline ChannelSplit plan_channel_split(int64_t n, int64_t c, int64_t s,
                                       int64_t threads, int64_t target_blocks) {
  ChannelSplit p{n, c, s, 1, 0};
  const int64_t per = n * s;
  const int64_t by_work = per / (8 * threads);
  const int64_t by_grid = c > 0 ? (target_blocks + c - 1) / c : 1;
  int64_t splits = by_work < by_grid ? by_work : by_grid;
  splits = splits < 1 ? 1 : splits;
  p.chunk = (per + splits - 1) / splits;
  // Every chunk non-empty: drop the splits the rounding left without work.
  p.splits = p.chunk > 0 ? (per + p.chunk - 1) / p.chunk : 1;
  return p;
}

/** y = x a + b per channel, the forward's map, in the parameters' type. */
template <class T>
struct BatchNormAffine {
  T a, b;
  TPF_HOST_DEVICE BatchNormAffine(T scale, T offset, T mean, T variance,
                                  double epsilon) {
    using std::fma;
    using std::sqrt;
    a = scale / sqrt(variance + T(epsilon));
    // Fused by hand: whether a compiler contracts offset - mean * a depends
    // on its optimization level, and every backend must round alike.
    b = fma(-mean, a, offset);
  }
};

/**
 * The gradient of one channel from its sums over (N, S) of dy and of
 * dy (x - mean): dscale, doffset, and dx = k dy + a x + b (in training,
 * dx = k (dy - (sum dy + xhat sum dy xhat) / count) with xhat = (x - mean)
 * inv; in inference, dx = k dy). In double, as the CPU computes it.
 */
struct BatchNormGradCoefficients {
  double k, a, b, dscale, doffset;
  TPF_HOST_DEVICE BatchNormGradCoefficients(double scale, double mean,
                                            double variance, double epsilon,
                                            bool training, double count,
                                            double sum_dy, double sum_dy_xc) {
    using std::sqrt;
    const double inv = 1.0 / sqrt(variance + epsilon);
    k = scale * inv;
    a = training ? -k * inv * inv * sum_dy_xc / count : 0.0;
    b = training ? -k * sum_dy / count - a * mean : 0.0;
    dscale = sum_dy_xc * inv;
    doffset = sum_dy;
  }
};

}  // namespace tapeflow
