// Kernels that write without reading tensors: cast/copy, constants, random.
#include <cmath>

#include "core/convert_value.hpp"
#include "core/dtype_dispatch.hpp"
#include "core/philox.hpp"
#include "cpu/strided_loop.hpp"
#include "cpu/string_kernels.hpp"
#include "cpu/xsimd_config.hpp"
#include "ops/elementwise_ops.hpp"

namespace tapeflow::cpu {
namespace {

/** Strided copy with conversion; out may itself be a strided view. */
void cast(const Cast&, Inputs in, const Outputs& outs) {
  Tensor& out = outs[0];
  // cast() refuses text to numbers and back; string to string is a copy.
  if (is_string(in[0].dtype()) && is_string(out.dtype()))
    return strings::copy(in[0], out);
  dispatch_all(in[0].dtype(), Cast::name, [&](auto from) {
    dispatch_all(out.dtype(), Cast::name, [&](auto to) {
      using From = decltype(from);
      using To = decltype(to);
      const From* a = static_cast<const From*>(in[0].raw_data());
      To* o = static_cast<To*>(out.raw_data());
      run_elementwise<2>(out, {&in[0]},
                         [&](const auto& off, int64_t n, const auto& st) {
                           To* po = o + off[0];
                           const From* pa = a + off[1];
                           if (st[0] == 1 && st[1] == 1) {
                             for (int64_t i = 0; i < n; ++i)
                               po[i] = convert_value<To>(pa[i]);
                           } else {
                             for (int64_t i = 0; i < n; ++i)
                               po[i * st[0]] = convert_value<To>(pa[i * st[1]]);
                           }
                         });
    });
  });
}

void full(const Full& op, Inputs, const Outputs& outs) {
  Tensor& out = outs[0];
  dispatch_all(out.dtype(), Full::name, [&](auto tag) {
    using T = decltype(tag);
    T* o = static_cast<T*>(out.raw_data());
    const T v = convert_value<T>(op.value);
    parallel_for(out.numel(), kParallelGrain,
                 [&](int64_t b, int64_t e) { std::fill(o + b, o + e, v); });
  });
}

using U32 = xsimd::batch<uint32_t>;
using U64 = xsimd::batch<uint64_t>;
constexpr int64_t kLanes = U32::size;

// 64-bit products of the even 32-bit lanes (pmuludq), by register width:
// xsimd has only the full 64 x 64-bit product, three times the work.
inline __m128i mul_even(__m128i a, __m128i b) {
  return _mm_mul_epu32(a, b);
}
#if defined(__AVX2__)
inline __m256i mul_even(__m256i a, __m256i b) {
  return _mm256_mul_epu32(a, b);
}
#endif
#if defined(__AVX512F__)
inline __m512i mul_even(__m512i a, __m512i b) {
  return _mm512_mul_epu32(a, b);
}
#endif

struct OddLane {
  static constexpr bool get(uint32_t i, uint32_t) { return i % 2; }
};
struct LaneIndex {
  static constexpr uint32_t get(uint32_t i, uint32_t) { return i; }
};

/** High and low words of a * m, lane by lane. */
[[gnu::always_inline]] inline void mul_hi_lo(const U32& a, const U32& m,
                                             U32& hi, U32& lo) {
  constexpr auto odd = xsimd::make_batch_bool_constant<U32, OddLane>();
  const U64 even_p(mul_even(a, m));
  const U64 odd_p(mul_even(xsimd::bitwise_cast<U64>(a) >> 32, m));
  hi = xsimd::select(odd, xsimd::bitwise_cast<U32>(odd_p),
                     xsimd::bitwise_cast<U32>(even_p >> 32));
  lo = a * m;
}

/**
 * philox4x32 (core/philox.hpp) of the counters c, c + 1, ..., one per lane,
 * into w[word][lane]: bit for bit the same words, ~4x faster than one
 * counter at a time (the multiplies dominate either way).
 */
void philox_lanes(uint64_t c, uint64_t key, uint32_t (&w)[4][kLanes]) {
  U32 c0 = U32(static_cast<uint32_t>(c)) +
           U32(xsimd::make_batch_constant<U32, LaneIndex>());
  U32 c1 = U32(static_cast<uint32_t>(c >> 32)), c2(0u), c3(0u);
  uint32_t k0 = static_cast<uint32_t>(key),
           k1 = static_cast<uint32_t>(key >> 32);
  for (int round = 0; round < 10; ++round) {
    U32 hi0, lo0, hi1, lo1;
    mul_hi_lo(c0, U32(0xD2511F53u), hi0, lo0);
    mul_hi_lo(c2, U32(0xCD9E8D57u), hi1, lo1);
    c0 = hi1 ^ c1 ^ U32(k0);
    c1 = lo1;
    c2 = hi0 ^ c3 ^ U32(k1);
    c3 = lo0;
    k0 += 0x9E3779B9;
    k1 += 0xBB67AE85;
  }
  c0.store_aligned(w[0]);
  c1.store_aligned(w[1]);
  c2.store_aligned(w[2]);
  c3.store_aligned(w[3]);
}

/** The four words of lane j, indexed like philox4x32's result. */
struct Lane {
  const uint32_t (&w)[4][kLanes];
  int64_t j;
  uint32_t operator[](int k) const { return w[k][j]; }
};

template <class Gen>
void fill_random(Tensor& out, uint64_t seed, uint64_t offset, Gen gen) {
  dispatch_floating(out.dtype(), "random", [&](auto tag) {
    using T = decltype(tag);
    T* o = static_cast<T*>(out.raw_data());
    parallel_for(out.numel(), 4096, [&](int64_t b, int64_t e) {
      int64_t i = b;
      // Lanes of one call share the counter's high word, so a batch whose
      // low words would wrap around takes the scalar path.
      for (; i + kLanes <= e; i += kLanes) {
        const uint64_t c = offset + i;
        if (static_cast<uint32_t>(c) > UINT32_MAX - (kLanes - 1)) break;
        alignas(64) uint32_t w[4][kLanes];
        philox_lanes(c, seed, w);
        for (int64_t j = 0; j < kLanes; ++j)
          o[i + j] = static_cast<T>(gen(Lane{w, j}, T{}));
      }
      for (; i < e; ++i)
        o[i] = static_cast<T>(gen(philox4x32(offset + i, seed), T{}));
    });
  });
}

void random_uniform(const RandomUniform& op, Inputs, const Outputs& outs) {
  const double lo = op.lo, span = op.hi - op.lo;
  fill_random(outs[0], op.seed, op.offset, [lo, span](const auto& w, auto tag) {
    return uniform_sample<decltype(tag)>(w, lo, span);
  });
}

void random_normal(const RandomNormal& op, Inputs, const Outputs& outs) {
  fill_random(outs[0], op.seed, op.offset, [&op](const auto& w, auto tag) {
    return normal_sample<decltype(tag)>(w, op.mean, op.stddev);
  });
}

}  // namespace

void register_fill(Registry& r) {
  constexpr auto cpu = DeviceType::cpu;
  r.set<Cast>(cpu, cast, "xsimd");
  r.set<Full>(cpu, full, "xsimd");
  r.set<RandomUniform>(cpu, random_uniform, "philox");
  r.set<RandomNormal>(cpu, random_normal, "philox");
}

}  // namespace tapeflow::cpu
