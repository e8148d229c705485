#pragma once
#include <array>
#include <cstdint>

namespace tapeflow {

/**
 * Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2,
 * 3"): a counter-based generator, so element i's value depends only on
 * (seed, offset + i) and never on how the work is split across threads.
 */
inline std::array<uint32_t, 4> philox4x32(uint64_t counter, uint64_t key) {
  std::array<uint32_t, 4> c = {static_cast<uint32_t>(counter),
                               static_cast<uint32_t>(counter >> 32), 0, 0};
  uint32_t k0 = static_cast<uint32_t>(key);
  uint32_t k1 = static_cast<uint32_t>(key >> 32);
  for (int round = 0; round < 10; ++round) {
    const uint64_t p0 = uint64_t{0xD2511F53} * c[0];
    const uint64_t p1 = uint64_t{0xCD9E8D57} * c[2];
    c = {static_cast<uint32_t>(p1 >> 32) ^ c[1] ^ k0, static_cast<uint32_t>(p1),
         static_cast<uint32_t>(p0 >> 32) ^ c[3] ^ k1,
         static_cast<uint32_t>(p0)};
    k0 += 0x9E3779B9;
    k1 += 0xBB67AE85;
  }
  return c;
}

/** Uniform in [0, 1) with 24 (float) or 53 (double) random bits. */
inline float unit_float(uint32_t w) {
  return (w >> 8) * 0x1.0p-24f;
}
inline double unit_double(uint32_t hi, uint32_t lo) {
  return ((uint64_t{hi} << 21) ^ (lo >> 11)) * 0x1.0p-53;
}

}  // namespace tapeflow
