#pragma once
// The random streams of random_uniform, random_normal and dropout, shared by
// the CPU and CUDA kernels: element i of a stream is a function of (seed,
// offset + i) alone, so every device and every split of the work draws the
// same numbers.
#include <cmath>
#include <cstdint>
#include <numbers>

#include "core/host_device.hpp"

namespace tapeflow {

/** The four 32-bit words one Philox counter gives. */
struct PhiloxWords {
  uint32_t w[4];
  TPF_HOST_DEVICE constexpr uint32_t operator[](int i) const { return w[i]; }
};

/**
 * Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2,
 * 3"): a counter-based generator.
 */
TPF_HOST_DEVICE inline PhiloxWords philox4x32(uint64_t counter, uint64_t key) {
  uint32_t c0 = static_cast<uint32_t>(counter),
           c1 = static_cast<uint32_t>(counter >> 32), c2 = 0, c3 = 0;
  uint32_t k0 = static_cast<uint32_t>(key);
  uint32_t k1 = static_cast<uint32_t>(key >> 32);
  for (int round = 0; round < 10; ++round) {
    const uint64_t p0 = uint64_t{0xD2511F53} * c0;
    const uint64_t p1 = uint64_t{0xCD9E8D57} * c2;
    const uint32_t n0 = static_cast<uint32_t>(p1 >> 32) ^ c1 ^ k0;
    const uint32_t n2 = static_cast<uint32_t>(p0 >> 32) ^ c3 ^ k1;
    c1 = static_cast<uint32_t>(p1);
    c3 = static_cast<uint32_t>(p0);
    c0 = n0;
    c2 = n2;
    k0 += 0x9E3779B9;
    k1 += 0xBB67AE85;
  }
  return {{c0, c1, c2, c3}};
}

/** Uniform in [0, 1) with 24 (float) or 53 (double) random bits. */
TPF_HOST_DEVICE inline float unit_float(uint32_t w) {
  return (w >> 8) * 0x1.0p-24f;
}
TPF_HOST_DEVICE inline double unit_double(uint32_t hi, uint32_t lo) {
  return ((uint64_t{hi} << 21) ^ (lo >> 11)) * 0x1.0p-53;
}

/**
 * lo + span * u rounded once (a fused multiply-add) on every device: g++
 * contracts the plain expression where the build targets FMA and nvcc does
 * on the GPU, so only an explicit fma gives the same bits everywhere (a
 * build without FMA instructions computes it in software).
 */
TPF_HOST_DEVICE inline double scale_shift(double lo, double span, double u) {
#ifdef __CUDA_ARCH__
  return fma(span, u, lo);
#else
  return std::fma(span, u, lo);
#endif
}

/** The largest T below `x`. */
template <class T>
TPF_HOST_DEVICE inline T next_below(T x) {
#ifdef __CUDA_ARCH__
  return nextafter(x, T(-INFINITY));
#else
  return std::nextafter(x, T(-INFINITY));
#endif
}

/** Element `w` of a uniform stream on [lo, lo + span), T float or double. */
template <class T, class Words>
TPF_HOST_DEVICE inline T uniform_sample(const Words& w, double lo,
                                        double span) {
  const double u =
      sizeof(T) == sizeof(float) ? unit_float(w[0]) : unit_double(w[0], w[1]);
  const T x = static_cast<T>(scale_shift(lo, span, u));
  // Rounding to T may land on lo + span, which the range excludes (a float
  // in [1e6, 1e6 + 1) has 16 values to take, and u's top ones round up).
  const T hi = static_cast<T>(lo + span);
  return span > 0 && x >= hi && hi > T(lo) ? next_below(hi) : x;
}

/** Element `w` of a normal stream (Box-Muller, in double). */
template <class T, class Words>
TPF_HOST_DEVICE inline T normal_sample(const Words& w, double mean,
                                       double stddev) {
  // 1 - u keeps the logarithm's argument in (0, 1].
  const double u1 = 1.0 - unit_double(w[0], w[1]);
  const double u2 = unit_double(w[2], w[3]);
  const double z =
      std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
  return static_cast<T>(scale_shift(mean, stddev, z));
}

}  // namespace tapeflow
