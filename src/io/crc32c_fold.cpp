// The folding CRC32C paths (crc32c_fold.hpp) for AVX-512 and for AVX2 with
// VPCLMULQDQ, and the CPU checks that choose them. The TFRecord reader copies
// each record out of its stream buffer with crc32c_copy, so the fused copy is
// what reading TFRecords costs beyond read() itself.
#include <cstddef>
#include <cstdint>

#include "crc32c_detail.hpp"

#if defined(__x86_64__)
#include <immintrin.h>

namespace tapeflow::io::detail {
namespace {

/** x^(D+31) mod P: the fold constant of a lane's higher half, D bits on. */
constexpr uint64_t fold_high(int d) {
  return crc32c_times_x(0x80000000u, d + 31);
}
/** x^(D-33) mod P: the fold constant of a lane's lower half. */
constexpr uint64_t fold_low(int d) {
  return crc32c_times_x(0x80000000u, d - 33);
}

namespace avx512 {
#define TPF_CRC_TARGET \
  __attribute__((target("avx512f,vpclmulqdq,sse4.2,pclmul")))
struct Vec {
  using V = __m512i;
  static constexpr size_t kBytes = 64;
  TPF_CRC_TARGET static V load(const unsigned char* p) {
    return _mm512_loadu_si512(p);
  }
  TPF_CRC_TARGET static void store(unsigned char* d, V v) {
    _mm512_storeu_si512(d, v);
  }
  TPF_CRC_TARGET static V pair(uint64_t high, uint64_t low) {
    const auto h = static_cast<int64_t>(high), l = static_cast<int64_t>(low);
    return _mm512_set_epi64(l, h, l, h, l, h, l, h);
  }
  TPF_CRC_TARGET static V constants(const uint64_t* k) {
    return _mm512_load_si512(k);
  }
  /** a folded by k (every lane), xor b. */
  TPF_CRC_TARGET static V fold(V a, V k, V b) {
    return _mm512_ternarylogic_epi64(_mm512_clmulepi64_epi128(a, k, 0x00),
                                     _mm512_clmulepi64_epi128(a, k, 0x11), b,
                                     0x96);
  }
  TPF_CRC_TARGET static V zero() { return _mm512_setzero_si512(); }
  TPF_CRC_TARGET static V xor_(V a, V b) { return _mm512_xor_si512(a, b); }
  TPF_CRC_TARGET static V xor_low32(V a, uint32_t c) {
    return _mm512_xor_si512(
        a, _mm512_zextsi128_si512(_mm_cvtsi32_si128(static_cast<int>(c))));
  }
  TPF_CRC_TARGET static V last_lane(V v) {
    return _mm512_maskz_mov_epi64(0xC0, v);
  }
  TPF_CRC_TARGET static __m128i xor_lanes(V y) {
    return _mm_xor_si128(_mm_xor_si128(_mm512_extracti32x4_epi32(y, 0),
                                       _mm512_extracti32x4_epi32(y, 1)),
                         _mm_xor_si128(_mm512_extracti32x4_epi32(y, 2),
                                       _mm512_extracti32x4_epi32(y, 3)));
  }
};
#include "crc32c_fold.hpp"
#undef TPF_CRC_TARGET
}  // namespace avx512

namespace avx2 {
#define TPF_CRC_TARGET __attribute__((target("avx2,vpclmulqdq,sse4.2,pclmul")))
struct Vec {
  using V = __m256i;
  static constexpr size_t kBytes = 32;
  TPF_CRC_TARGET static V load(const unsigned char* p) {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  }
  TPF_CRC_TARGET static void store(unsigned char* d, V v) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(d), v);
  }
  TPF_CRC_TARGET static V pair(uint64_t high, uint64_t low) {
    const auto h = static_cast<int64_t>(high), l = static_cast<int64_t>(low);
    return _mm256_set_epi64x(l, h, l, h);
  }
  TPF_CRC_TARGET static V constants(const uint64_t* k) {
    return _mm256_load_si256(reinterpret_cast<const __m256i*>(k));
  }
  /** a folded by k (every lane), xor b. */
  TPF_CRC_TARGET static V fold(V a, V k, V b) {
    return _mm256_xor_si256(
        _mm256_xor_si256(_mm256_clmulepi64_epi128(a, k, 0x00),
                         _mm256_clmulepi64_epi128(a, k, 0x11)),
        b);
  }
  TPF_CRC_TARGET static V zero() { return _mm256_setzero_si256(); }
  TPF_CRC_TARGET static V xor_(V a, V b) { return _mm256_xor_si256(a, b); }
  TPF_CRC_TARGET static V xor_low32(V a, uint32_t c) {
    return _mm256_xor_si256(
        a, _mm256_zextsi128_si256(_mm_cvtsi32_si128(static_cast<int>(c))));
  }
  TPF_CRC_TARGET static V last_lane(V v) {
    return _mm256_blend_epi32(_mm256_setzero_si256(), v, 0xF0);
  }
  TPF_CRC_TARGET static __m128i xor_lanes(V y) {
    return _mm_xor_si128(_mm256_castsi256_si128(y),
                         _mm256_extracti128_si256(y, 1));
  }
};
#include "crc32c_fold.hpp"
#undef TPF_CRC_TARGET
}  // namespace avx2

}  // namespace

uint32_t crc32c_avx512(uint32_t crc, const void* data, size_t n) {
  return avx512::crc(crc, data, n);
}
uint32_t crc32c_copy_avx512(uint32_t crc, void* dst, const void* src,
                            size_t n) {
  return avx512::copy_crc(crc, dst, src, n);
}
uint32_t crc32c_avx2(uint32_t crc, const void* data, size_t n) {
  return avx2::crc(crc, data, n);
}
uint32_t crc32c_copy_avx2(uint32_t crc, void* dst, const void* src, size_t n) {
  return avx2::copy_crc(crc, dst, src, n);
}

}  // namespace tapeflow::io::detail
#endif

namespace tapeflow::io::detail {

bool crc32c_has_avx512() {
#if defined(__x86_64__)
  __builtin_cpu_init();
  return crc32c_has_sse42() && __builtin_cpu_supports("avx512f") &&
         __builtin_cpu_supports("vpclmulqdq");
#else
  return false;
#endif
}

bool crc32c_has_avx2_clmul() {
#if defined(__x86_64__)
  __builtin_cpu_init();
  return crc32c_has_sse42() && __builtin_cpu_supports("avx2") &&
         __builtin_cpu_supports("vpclmulqdq");
#else
  return false;
#endif
}

}  // namespace tapeflow::io::detail
