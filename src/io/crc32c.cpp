// CRC32C. The TFRecord reader checksums every byte it returns, so this is its
// hot loop. With SSE4.2 the crc32 instruction does 8 bytes at a time but has
// a 3-cycle latency, so three independent streams run side by side and are
// combined with one carry-less multiply each (PCLMUL): about 8 bytes per
// cycle. Without it, slice-by-8 tables (about 1.5 bytes per cycle).
#include "tapeflow/io/crc32c.hpp"

#include <algorithm>
#include <array>
#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "crc32c_detail.hpp"

namespace tapeflow::io {
namespace {

constexpr uint32_t kPoly = 0x82F63B78u;  // reflected 0x1EDC6F41

/** t[k][b]: the CRC register after byte b followed by k zero bytes. */
constexpr std::array<std::array<uint32_t, 256>, 8> make_tables() {
  std::array<std::array<uint32_t, 256>, 8> t{};
  for (uint32_t b = 0; b < 256; ++b) {
    uint32_t c = b;
    for (int i = 0; i < 8; ++i) c = (c & 1) ? (c >> 1) ^ kPoly : c >> 1;
    t[0][b] = c;
  }
  for (size_t k = 1; k < 8; ++k)
    for (size_t b = 0; b < 256; ++b)
      t[k][b] = (t[k - 1][b] >> 8) ^ t[0][t[k - 1][b] & 0xff];
  return t;
}
constexpr auto kTables = make_tables();

uint64_t load64(const unsigned char* p) {
  uint64_t w;
  std::memcpy(&w, p, 8);
  return w;  // little-endian: the first byte is the lowest
}

}  // namespace

uint32_t detail::crc32c_portable(uint32_t crc, const void* data, size_t n) {
  const auto* p = static_cast<const unsigned char*>(data);
  const auto& t = kTables;
  uint32_t c = ~crc;
  for (; n >= 8; p += 8, n -= 8) {
    const uint64_t w = load64(p) ^ c;
    c = t[7][w & 0xff] ^ t[6][(w >> 8) & 0xff] ^ t[5][(w >> 16) & 0xff] ^
        t[4][(w >> 24) & 0xff] ^ t[3][(w >> 32) & 0xff] ^
        t[2][(w >> 40) & 0xff] ^ t[1][(w >> 48) & 0xff] ^ t[0][w >> 56];
  }
  for (; n > 0; ++p, --n) c = t[0][(c ^ *p) & 0xff] ^ (c >> 8);
  return ~c;
}

#if defined(__x86_64__)
namespace {

// Longest stream of the 3-way loop, in 8-byte words.
constexpr size_t kMaxWords = 256;

/** x^m mod P in the reflected representation (bit 31 is x^0). */
constexpr uint32_t times_x(uint32_t v, int m) {
  for (int i = 0; i < m; ++i) v = (v & 1) ? (v >> 1) ^ kPoly : v >> 1;
  return v;
}

// A CRC register r shifted over n zero bytes is r * x^(8n) mod P. The
// carry-less product of two reflected 32-bit values is the polynomial product
// times x, and crc32(0, 64 bits) multiplies by x^32 and reduces, so
// crc32(0, clmul(r, x^(8n-33) mod P)) == r * x^(8n) mod P.
struct Shifts {
  std::array<uint32_t, kMaxWords + 1> one{}, two{};  // by w and by 2w words
};
constexpr Shifts make_shifts() {
  Shifts s;
  s.one[1] = times_x(0x80000000u, 64 - 33);
  s.two[1] = times_x(0x80000000u, 128 - 33);
  for (size_t w = 2; w <= kMaxWords; ++w) {
    s.one[w] = times_x(s.one[w - 1], 64);
    s.two[w] = times_x(s.two[w - 1], 128);
  }
  return s;
}
constexpr Shifts kShifts = make_shifts();

__attribute__((target("sse4.2,pclmul"))) uint64_t shift_by(uint64_t r,
                                                           uint32_t k) {
  const __m128i prod =
      _mm_clmulepi64_si128(_mm_cvtsi64_si128(static_cast<int64_t>(r)),
                           _mm_cvtsi32_si128(static_cast<int>(k)), 0x00);
  return _mm_crc32_u64(0, static_cast<uint64_t>(_mm_cvtsi128_si64(prod)));
}

__attribute__((target("sse4.2,pclmul"))) uint32_t sse42(uint32_t crc,
                                                        const void* data,
                                                        size_t n) {
  const auto* p = static_cast<const unsigned char*>(data);
  uint64_t c = ~crc;
  for (; n >= 24;) {
    const size_t words = std::min(n / 24, kMaxWords);
    const size_t len = words * 8;
    const unsigned char* p1 = p + len;
    const unsigned char* p2 = p1 + len;
    uint64_t c1 = 0, c2 = 0;
    for (size_t i = 0; i < len; i += 8) {
      c = _mm_crc32_u64(c, load64(p + i));
      c1 = _mm_crc32_u64(c1, load64(p1 + i));
      c2 = _mm_crc32_u64(c2, load64(p2 + i));
    }
    c = shift_by(c, kShifts.two[words]) ^ shift_by(c1, kShifts.one[words]) ^ c2;
    p += 3 * len;
    n -= 3 * len;
  }
  for (; n >= 8; p += 8, n -= 8) c = _mm_crc32_u64(c, load64(p));
  for (; n > 0; ++p, --n) c = _mm_crc32_u8(static_cast<uint32_t>(c), *p);
  return ~static_cast<uint32_t>(c);
}

}  // namespace

uint32_t detail::crc32c_sse42(uint32_t crc, const void* data, size_t n) {
  return sse42(crc, data, n);
}

namespace {

// AVX-512 path: folding. A 16-byte lane A (bits 0..63 hold the higher
// degrees H, 64..127 the lower L) that lies D bits before another one adds
// A * x^D = H * x^(D+64) + L * x^D to it, and with the clmul scaling above,
// clmul(H, x^(D+31) mod P) ^ clmul(L, x^(D-33) mod P) is congruent to that
// and fits in 128 bits. Four 64-byte accumulators fold 256 bytes per step.
constexpr uint64_t kHigh(int d) {
  return times_x(0x80000000u, d + 31);
}
constexpr uint64_t kLow(int d) {
  return times_x(0x80000000u, d - 33);
}

// A template so that the constants are computed by the compiler.
template <int D>
__attribute__((target("avx512f,vpclmulqdq"))) __m512i fold_by() {
  constexpr auto hi = static_cast<int64_t>(kHigh(D));
  constexpr auto lo = static_cast<int64_t>(kLow(D));
  return _mm512_set_epi64(lo, hi, lo, hi, lo, hi, lo, hi);
}

/** a folded by k (every lane), xor b. */
__attribute__((target("avx512f,vpclmulqdq"))) __m512i fold(__m512i a, __m512i k,
                                                           __m512i b) {
  return _mm512_ternarylogic_epi64(_mm512_clmulepi64_epi128(a, k, 0x00),
                                   _mm512_clmulepi64_epi128(a, k, 0x11), b,
                                   0x96);
}

// Fold constants for the four lanes of a 64-byte block that lies `after`
// blocks before the last one, each lane onto the last lane of the data. The
// last lane's own constants are zero (it is xored in as it is).
struct Tail {
  alignas(64) std::array<uint64_t, 8> k{};
};
constexpr size_t kMaxAfter = 6;  // 3 accumulators + 3 remaining blocks
constexpr std::array<Tail, kMaxAfter + 1> make_tails() {
  std::array<Tail, kMaxAfter + 1> t{};
  for (size_t after = 0; after <= kMaxAfter; ++after)
    for (size_t j = 0; j < 4; ++j) {
      const int bits = static_cast<int>((after * 4 + 3 - j) * 128);
      if (bits == 0) continue;
      t[after].k[2 * j] = kHigh(bits);
      t[after].k[2 * j + 1] = kLow(bits);
    }
  return t;
}
constexpr auto kTails = make_tails();

__attribute__((target("avx512f"))) __m512i tail_by(size_t after) {
  return _mm512_load_si512(kTails[after].k.data());
}

/**
 * The 64 bytes at p; with Copy, also stored at d (the copy rides along with
 * the loads the CRC needs anyway, so the data is touched once).
 */
template <bool Copy>
__attribute__((target("avx512f"))) __m512i load_block(const unsigned char* p,
                                                      unsigned char* d) {
  const __m512i v = _mm512_loadu_si512(p);
  if constexpr (Copy) _mm512_storeu_si512(d, v);
  return v;
}

/** The AVX-512 CRC of n >= 256 bytes at p; with Copy, also copies them to d. */
template <bool Copy>
__attribute__((target("avx512f,vpclmulqdq,sse4.2,pclmul"))) uint32_t
crc32c_fold(uint32_t crc, unsigned char* d, const unsigned char* p, size_t n) {
  // The initial register enters as an xor into the first 4 bytes.
  __m512i x0 = _mm512_xor_si512(
      load_block<Copy>(p, d),
      _mm512_zextsi128_si512(_mm_cvtsi32_si128(static_cast<int>(~crc))));
  __m512i x1 = load_block<Copy>(p + 64, d + 64);
  __m512i x2 = load_block<Copy>(p + 128, d + 128);
  __m512i x3 = load_block<Copy>(p + 192, d + 192);
  p += 256;
  d += Copy ? 256 : 0;
  n -= 256;
  const __m512i k2048 = fold_by<2048>();
  for (; n >= 256; p += 256, d += Copy ? 256 : 0, n -= 256) {
    x0 = fold(x0, k2048, load_block<Copy>(p, d));
    x1 = fold(x1, k2048, load_block<Copy>(p + 64, d + 64));
    x2 = fold(x2, k2048, load_block<Copy>(p + 128, d + 128));
    x3 = fold(x3, k2048, load_block<Copy>(p + 192, d + 192));
  }
  // The remaining whole blocks follow the accumulators; every 16-byte lane
  // of them all is folded straight onto the last lane (latency: one fold).
  const size_t rest = n / 64;
  __m512i y = fold(x0, tail_by(3 + rest), _mm512_setzero_si512());
  y = fold(x1, tail_by(2 + rest), y);
  y = fold(x2, tail_by(1 + rest), y);
  y = fold(x3, tail_by(rest), y);
  __m512i last = x3;
  for (size_t i = rest; i > 0; --i, p += 64, d += Copy ? 64 : 0, n -= 64) {
    last = load_block<Copy>(p, d);
    y = fold(last, tail_by(i - 1), y);
  }
  // The last lane itself has zero constants: it enters as it is.
  y = _mm512_xor_si512(y, _mm512_maskz_mov_epi64(0xC0, last));
  const __m128i lane =
      _mm_xor_si128(_mm_xor_si128(_mm512_extracti32x4_epi32(y, 0),
                                  _mm512_extracti32x4_epi32(y, 1)),
                    _mm_xor_si128(_mm512_extracti32x4_epi32(y, 2),
                                  _mm512_extracti32x4_epi32(y, 3)));
  // The 16 bytes of `lane` are now the whole message so far.
  const uint64_t c = _mm_crc32_u64(
      _mm_crc32_u64(0, static_cast<uint64_t>(_mm_cvtsi128_si64(lane))),
      static_cast<uint64_t>(_mm_extract_epi64(lane, 1)));
  // Whole blocks (1 KiB records) end here, without a call for nothing.
  if (n == 0) return ~static_cast<uint32_t>(c);
  if constexpr (Copy) std::memcpy(d, p, n);
  return sse42(~static_cast<uint32_t>(c), p, n);
}

}  // namespace

__attribute__((target("avx512f,vpclmulqdq,sse4.2,pclmul"))) uint32_t
detail::crc32c_avx512(uint32_t crc, const void* data, size_t n) {
  if (n < 256) return sse42(crc, data, n);
  return crc32c_fold<false>(crc, nullptr,
                            static_cast<const unsigned char*>(data), n);
}

__attribute__((target("avx512f,vpclmulqdq,sse4.2,pclmul"))) uint32_t
detail::crc32c_copy_avx512(uint32_t crc, void* dst, const void* src, size_t n) {
  if (n < 256) {
    std::memcpy(dst, src, n);
    return sse42(crc, src, n);
  }
  return crc32c_fold<true>(crc, static_cast<unsigned char*>(dst),
                           static_cast<const unsigned char*>(src), n);
}

#endif

bool detail::crc32c_has_avx512() {
#if defined(__x86_64__)
  __builtin_cpu_init();
  return crc32c_has_sse42() && __builtin_cpu_supports("avx512f") &&
         __builtin_cpu_supports("vpclmulqdq");
#else
  return false;
#endif
}

bool detail::crc32c_has_sse42() {
#if defined(__x86_64__)
  __builtin_cpu_init();
  return __builtin_cpu_supports("sse4.2") && __builtin_cpu_supports("pclmul");
#else
  return false;
#endif
}

namespace {
using CrcFn = uint32_t (*)(uint32_t, const void*, size_t);
CrcFn pick() {
#if defined(__x86_64__)
  if (detail::crc32c_has_avx512()) return detail::crc32c_avx512;
  if (detail::crc32c_has_sse42()) return detail::crc32c_sse42;
#endif
  return detail::crc32c_portable;
}
}  // namespace

uint32_t detail::crc32c_copy_generic(uint32_t crc, void* dst, const void* src,
                                     size_t n) {
  std::memcpy(dst, src, n);
  return crc32c_extend(crc, dst, n);
}

uint32_t crc32c_extend(uint32_t crc, const void* data, size_t n) {
  static const CrcFn fn = pick();
  return fn(crc, data, n);
}

uint32_t detail::crc32c_copy(uint32_t crc, void* dst, const void* src,
                             size_t n) {
#if defined(__x86_64__)
  static const bool avx512 = crc32c_has_avx512();
  if (avx512) return crc32c_copy_avx512(crc, dst, src, n);
#endif
  return crc32c_copy_generic(crc, dst, src, n);
}

}  // namespace tapeflow::io
