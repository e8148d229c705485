// float32 -> bfloat16 for the operands of bfloat16 products. oneDNN's
// reorder does the same rounding but ran a 3136x1024 dense-layer weight at
// about 20 GB/s, its transpose slower, and small operands at a fixed cost of
// a parallel primitive; AVX512-BF16's VCVTNE2PS2BF16 converts 32 values per
// instruction.
#include "cpu/bf16_convert.hpp"

#include <immintrin.h>

#include "cpu/parallel.hpp"

namespace tapeflow::cpu {
namespace {

[[gnu::target("avx512f,avx512bw,avx512vl,avx512bf16")]] void convert_range(
    const float* from, uint16_t* to, int64_t n) {
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m512bh pair = _mm512_cvtne2ps_pbh(_mm512_loadu_ps(from + i + 16),
                                              _mm512_loadu_ps(from + i));
    _mm512_storeu_si512(to + i, reinterpret_cast<__m512i>(pair));
  }
  for (; i < n; i += 16) {
    const __mmask16 m =
        n - i >= 16 ? __mmask16(0xffff) : __mmask16((1u << (n - i)) - 1);
    const __m256bh half =
        _mm512_cvtneps_pbh(_mm512_maskz_loadu_ps(m, from + i));
    _mm256_mask_storeu_epi16(to + i, m, reinterpret_cast<__m256i>(half));
  }
}

}  // namespace

void convert_to_bf16(const float* from, uint16_t* to, int64_t n) {
  parallel_for(n, kParallelGrain, [&](int64_t begin, int64_t end) {
    convert_range(from + begin, to + begin, end - begin);
  });
}

}  // namespace tapeflow::cpu
