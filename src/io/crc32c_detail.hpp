#pragma once
// The CRC32C implementations behind crc32c_extend and crc32c_copy, visible to
// the tests so that each is checked whatever the CPU picks.
#include <cstddef>
#include <cstdint>
#include <cstring>

#if defined(__SSE4_2__)
#include <nmmintrin.h>
#endif

#include "tapeflow/io/crc32c.hpp"

namespace tapeflow::io::detail {

constexpr uint32_t kCrc32cPoly = 0x82F63B78u;  // reflected 0x1EDC6F41

/** v * x^m mod P in the reflected representation (bit 31 is x^0). */
constexpr uint32_t crc32c_times_x(uint32_t v, int m) {
  for (int i = 0; i < m; ++i) v = (v & 1) ? (v >> 1) ^ kCrc32cPoly : v >> 1;
  return v;
}

/**
 * crc32c_extend(0, p, 8): a TFRecord length's CRC, taken once per record.
 * One inlined instruction where the build targets SSE4.2 (x86-64-v2 and
 * up), instead of a call through the dispatch.
 */
inline uint32_t crc32c_8(const unsigned char* p) {
#if defined(__SSE4_2__)
  uint64_t v;
  std::memcpy(&v, p, 8);
  return ~static_cast<uint32_t>(_mm_crc32_u64(0xffffffffu, v));
#else
  return crc32c_extend(0, p, 8);
#endif
}

/** Slice-by-8 tables: any CPU. */
uint32_t crc32c_portable(uint32_t crc, const void* data, size_t n);
/** True when the CPU has SSE4.2 and PCLMUL (crc32c_sse42 may be called). */
bool crc32c_has_sse42();
/** True when the CPU also has AVX-512F and VPCLMULQDQ. */
bool crc32c_has_avx512();
/** True when the CPU also has AVX2 and VPCLMULQDQ (Zen 3 and later). */
bool crc32c_has_avx2_clmul();
#if defined(__x86_64__)
/** Three interleaved crc32 streams combined with PCLMUL. */
uint32_t crc32c_sse42(uint32_t crc, const void* data, size_t n);
/** 512-bit carry-less multiply folding; crc32c_sse42 for short data. */
uint32_t crc32c_avx512(uint32_t crc, const void* data, size_t n);
/** crc32c_copy with AVX-512: each 64-byte load is stored as it is folded. */
uint32_t crc32c_copy_avx512(uint32_t crc, void* dst, const void* src, size_t n);
/** 256-bit folding (AVX2 + VPCLMULQDQ); crc32c_sse42 for short data. */
uint32_t crc32c_avx2(uint32_t crc, const void* data, size_t n);
/** crc32c_copy with AVX2 + VPCLMULQDQ: each 32-byte load is stored too. */
uint32_t crc32c_copy_avx2(uint32_t crc, void* dst, const void* src, size_t n);
#endif
/** crc32c_copy on any CPU: memcpy, then crc32c_extend over the copy. */
uint32_t crc32c_copy_generic(uint32_t crc, void* dst, const void* src,
                             size_t n);

/**
 * Copies n bytes from src to dst (which must not overlap) and returns
 * crc32c_extend(crc, src, n), reading src once: the TFRecord reader's copy
 * of a record out of the stream buffer.
 */
uint32_t crc32c_copy(uint32_t crc, void* dst, const void* src, size_t n);

}  // namespace tapeflow::io::detail
