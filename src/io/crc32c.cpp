// CRC32C. The TFRecord reader checksums every byte it returns, so this is its
// hot loop. With SSE4.2 the crc32 instruction does 8 bytes at a time but has
// a 3-cycle latency, so three independent streams run side by side and are
// combined with one carry-less multiply each (PCLMUL): about 8 bytes per
// cycle. Without it, slice-by-8 tables (about 1.5 bytes per cycle). CPUs with
// VPCLMULQDQ fold 256 bytes per step instead (crc32c_fold.cpp).
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

constexpr uint32_t kPoly = detail::kCrc32cPoly;

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

// A CRC register r shifted over n zero bytes is r * x^(8n) mod P. The
// carry-less product of two reflected 32-bit values is the polynomial product
// times x, and crc32(0, 64 bits) multiplies by x^32 and reduces, so
// crc32(0, clmul(r, x^(8n-33) mod P)) == r * x^(8n) mod P.
struct Shifts {
  std::array<uint32_t, kMaxWords + 1> one{}, two{};  // by w and by 2w words
};
constexpr Shifts make_shifts() {
  Shifts s;
  s.one[1] = detail::crc32c_times_x(0x80000000u, 64 - 33);
  s.two[1] = detail::crc32c_times_x(0x80000000u, 128 - 33);
  for (size_t w = 2; w <= kMaxWords; ++w) {
    s.one[w] = detail::crc32c_times_x(s.one[w - 1], 64);
    s.two[w] = detail::crc32c_times_x(s.two[w - 1], 128);
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

#endif

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
  if (detail::crc32c_has_avx2_clmul()) return detail::crc32c_avx2;
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

namespace {
using CopyFn = uint32_t (*)(uint32_t, void*, const void*, size_t);
CopyFn pick_copy() {
#if defined(__x86_64__)
  if (detail::crc32c_has_avx512()) return detail::crc32c_copy_avx512;
  if (detail::crc32c_has_avx2_clmul()) return detail::crc32c_copy_avx2;
#endif
  return detail::crc32c_copy_generic;
}
}  // namespace

uint32_t detail::crc32c_copy(uint32_t crc, void* dst, const void* src,
                             size_t n) {
  static const CopyFn fn = pick_copy();
  return fn(crc, dst, src, n);
}

}  // namespace tapeflow::io
