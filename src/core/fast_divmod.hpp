#pragma once
// Division by a divisor fixed before a kernel starts, as a multiply-high and
// a shift (Granlund and Montgomery; CUTLASS's FastDivmod): a few
// instructions, where a GPU spends about twenty on a 32-bit division by a
// runtime value and several times that on a 64-bit one. The index maps of
// the convolution kernels split every element's index this way.
#include <cstdint>

#include "core/host_device.hpp"

namespace tapeflow {

struct FastDivmod {
  uint32_t divisor = 1, multiplier = 0, shift = 0;

  FastDivmod() = default;
  /**
   * Exact for every dividend below 2³¹. A divisor of 0 (the extent of an
   * empty axis, which no index reaches) acts as 1.
   */
  explicit FastDivmod(uint32_t d) : divisor(d == 0 ? 1 : d) {
    if (divisor == 1) return;
    uint32_t log2_up = 0;  // the smallest l with 2^l >= d
    while ((uint64_t{1} << log2_up) < d) ++log2_up;
    const uint32_t p = 31 + log2_up;
    multiplier = static_cast<uint32_t>(((uint64_t{1} << p) + d - 1) / d);
    shift = p - 32;
  }

  TPF_HOST_DEVICE uint32_t quotient(uint32_t n) const {
    if (divisor == 1) return n;
#ifdef __CUDA_ARCH__
    return __umulhi(n, multiplier) >> shift;
#else
    return static_cast<uint32_t>((uint64_t{n} * multiplier) >> 32) >> shift;
#endif
  }
  /** n / divisor and n % divisor. */
  TPF_HOST_DEVICE void divmod(uint32_t n, uint32_t& q, uint32_t& r) const {
    q = quotient(n);
    r = n - q * divisor;
  }
};

}  // namespace tapeflow
