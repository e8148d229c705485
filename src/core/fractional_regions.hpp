#pragma once
// The regions of fractional pooling along one axis, for the CUDA kernels
// (cuda/fractional_pool.cu) and checked against the CPU's
// (cpu/fractional_pool.cpp) in tests/test_device_math.cpp. Region i spans
// seq[i] to seq[i + 1] - 1, or to seq[i + 1] when overlapping, never past
// the last position. The gradients gather: a position asks which regions
// hold it (one, or two on an overlapping boundary).
#include <cstdint>

#include "core/host_device.hpp"

namespace tapeflow {

struct FractionalAxis {
  const int64_t* seq;  // regions + 1 boundaries, from 0 to the extent
  int64_t regions, extent;
  bool overlapping;

  TPF_HOST_DEVICE int64_t first(int64_t i) const { return seq[i]; }
  TPF_HOST_DEVICE int64_t last(int64_t i) const {
    const int64_t end = overlapping ? seq[i + 1] : seq[i + 1] - 1;
    return end < extent - 1 ? end : extent - 1;
  }
  TPF_HOST_DEVICE int64_t size(int64_t i) const {
    return last(i) - first(i) + 1;
  }

  /**
   * The regions holding position x, into r[0..count), in ascending order;
   * count is 0, 1 or 2.
   */
  TPF_HOST_DEVICE int cover(int64_t x, int64_t (&r)[2]) const {
    // The last region starting at or before x: seq is increasing.
    int64_t lo = 0, hi = regions;  // answer in [lo, hi)
    while (hi - lo > 1) {
      const int64_t mid = (lo + hi) / 2;
      (seq[mid] <= x ? lo : hi) = mid;
    }
    int count = 0;
    // An overlapping region ends on the next one's first position.
    if (overlapping && lo > 0 && seq[lo] == x && last(lo - 1) >= x)
      r[count++] = lo - 1;
    if (regions > 0 && first(lo) <= x && x <= last(lo)) r[count++] = lo;
    return count;
  }
};

/**
 * Puts the output rows that hold one input row into the order in which the
 * CPU's gradients add them: with overlapping regions it runs the even
 * output rows, then the odd ones (columns it runs in ascending order).
 */
TPF_HOST_DEVICE inline void fractional_adding_order(int64_t (&r)[2],
                                                    int count) {
  if (count == 2 && r[0] % 2 == 1) {
    const int64_t t = r[0];
    r[0] = r[1];
    r[1] = t;
  }
}

}  // namespace tapeflow
