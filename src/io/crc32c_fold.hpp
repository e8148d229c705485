// CRC32C by carry-less multiply folding, for one vector width. Included by
// crc32c_fold.cpp once per instruction set, each time inside a namespace of
// its own that defines `Vec` (the vector type and its operations) and with
// TPF_CRC_TARGET naming that instruction set, so that one algorithm is
// compiled for AVX-512 (64-byte vectors) and for AVX2 + VPCLMULQDQ (32-byte
// vectors: Zen 3, Alder Lake and later CPUs without AVX-512). No include
// guard on purpose.
//
// Folding. A 16-byte lane A (bits 0..63 hold the higher degrees H, 64..127
// the lower L) that lies D bits before another one adds A * x^D =
// H * x^(D+64) + L * x^D to it, and with the clmul scaling of crc32c.cpp,
// clmul(H, x^(D+31) mod P) ^ clmul(L, x^(D-33) mod P) is congruent to that
// and fits in 128 bits. 256 bytes of accumulators fold 256 bytes per step.

constexpr size_t kAccumulators = 256 / Vec::kBytes;
constexpr size_t kLanes = Vec::kBytes / 16;
// A vector lies at most this many vectors before the last one at the end:
// kAccumulators - 1 accumulators and as many remaining whole vectors.
constexpr size_t kMaxAfter = 2 * kAccumulators - 2;

// Fold constants for the lanes of a vector that lies `after` vectors before
// the last one, each lane onto the last lane of the data. The last lane's own
// constants are zero (it is xored in as it is).
struct Tail {
  alignas(64) uint64_t k[2 * kLanes];
};
struct Tails {
  Tail after[kMaxAfter + 1];
};
constexpr Tails make_tails() {
  Tails t{};
  for (size_t after = 0; after <= kMaxAfter; ++after)
    for (size_t j = 0; j < kLanes; ++j) {
      const int bits =
          static_cast<int>((after * kLanes + kLanes - 1 - j) * 128);
      if (bits == 0) continue;
      t.after[after].k[2 * j] = fold_high(bits);
      t.after[after].k[2 * j + 1] = fold_low(bits);
    }
  return t;
}
constexpr Tails kTails = make_tails();

/**
 * The vector at p; with Copy, also stored at d (the copy rides along with the
 * loads the CRC needs anyway, so the data is touched once).
 */
template <bool Copy>
TPF_CRC_TARGET inline Vec::V load_block(const unsigned char* p,
                                        unsigned char* d) {
  const Vec::V v = Vec::load(p);
  if constexpr (Copy) Vec::store(d, v);
  return v;
}

/** The CRC of n >= 256 bytes at p; with Copy, also copies them to d. */
template <bool Copy>
TPF_CRC_TARGET uint32_t fold_crc(uint32_t crc, unsigned char* d,
                                 const unsigned char* p, size_t n) {
  constexpr size_t kStep = 256;
  Vec::V x[kAccumulators];
  for (size_t i = 0; i < kAccumulators; ++i)
    x[i] =
        load_block<Copy>(p + i * Vec::kBytes, Copy ? d + i * Vec::kBytes : d);
  // The initial register enters as an xor into the first 4 bytes.
  x[0] = Vec::xor_low32(x[0], ~crc);
  p += kStep;
  d = Copy ? d + kStep : d;
  n -= kStep;
  const Vec::V by_step = Vec::pair(fold_high(8 * kStep), fold_low(8 * kStep));
  for (; n >= kStep; p += kStep, d = Copy ? d + kStep : d, n -= kStep)
    for (size_t i = 0; i < kAccumulators; ++i)
      x[i] = Vec::fold(x[i], by_step,
                       load_block<Copy>(p + i * Vec::kBytes,
                                        Copy ? d + i * Vec::kBytes : d));
  // The remaining whole vectors follow the accumulators; every 16-byte lane
  // of them all is folded straight onto the last lane (latency: one fold).
  const size_t rest = n / Vec::kBytes;
  Vec::V y = Vec::zero();
  for (size_t i = 0; i < kAccumulators; ++i)
    y = Vec::fold(
        x[i], Vec::constants(kTails.after[kAccumulators - 1 - i + rest].k), y);
  Vec::V last = x[kAccumulators - 1];
  for (size_t i = rest; i > 0; --i) {
    last = load_block<Copy>(p, d);
    y = Vec::fold(last, Vec::constants(kTails.after[i - 1].k), y);
    p += Vec::kBytes;
    d = Copy ? d + Vec::kBytes : d;
    n -= Vec::kBytes;
  }
  // The last lane itself has zero constants: it enters as it is. The 16
  // bytes of the lanes' xor are then the whole message so far.
  const __m128i lane = Vec::xor_lanes(Vec::xor_(y, Vec::last_lane(last)));
  const uint64_t c = _mm_crc32_u64(
      _mm_crc32_u64(0, static_cast<uint64_t>(_mm_cvtsi128_si64(lane))),
      static_cast<uint64_t>(_mm_extract_epi64(lane, 1)));
  // Whole vectors (1 KiB records) end here, without a call for nothing.
  if (n == 0) return ~static_cast<uint32_t>(c);
  if constexpr (Copy) __builtin_memcpy(d, p, n);
  return crc32c_sse42(~static_cast<uint32_t>(c), p, n);
}

/** crc32c_extend over the folding path; crc32c_sse42 below 256 bytes. */
TPF_CRC_TARGET inline uint32_t crc(uint32_t crc, const void* data, size_t n) {
  if (n < 256) return crc32c_sse42(crc, data, n);
  return fold_crc<false>(crc, nullptr, static_cast<const unsigned char*>(data),
                         n);
}

/** crc32c_copy over the folding path. */
TPF_CRC_TARGET inline uint32_t copy_crc(uint32_t crc, void* dst,
                                        const void* src, size_t n) {
  if (n < 256) {
    __builtin_memcpy(dst, src, n);
    return crc32c_sse42(crc, src, n);
  }
  return fold_crc<true>(crc, static_cast<unsigned char*>(dst),
                        static_cast<const unsigned char*>(src), n);
}
