#pragma once
// The element offsets of a strided loop at a flat index (the CUDA
// elementwise kernels' non-flat path: broadcasts, transposes, slices), with
// each extent's division prepared as a FastDivmod. Shared with CI's host
// tests, which compare it with plain 64-bit division.
#include <cstdint>

#include "core/fast_divmod.hpp"
#include "core/host_device.hpp"
#include "tapeflow/core/shape.hpp"

namespace tapeflow {

/**
 * The offsets of N operands at flat index i of a row-major loop over `rank`
 * extents (`extents[d]` divides by extent d; operand k steps strides[k][d]
 * along it): i < 2³¹.
 */
template <int N>
TPF_HOST_DEVICE void strided_offsets(uint32_t i, int rank,
                                     const FastDivmod* extents,
                                     const int64_t (*strides)[kMaxRank],
                                     int64_t (&off)[N]) {
  for (int k = 0; k < N; ++k) off[k] = 0;
  for (int d = rank - 1; d >= 0; --d) {
    uint32_t rest, at;
    extents[d].divmod(i, rest, at);
    for (int k = 0; k < N; ++k) off[k] += int64_t{at} * strides[k][d];
    i = rest;
  }
}

}  // namespace tapeflow
