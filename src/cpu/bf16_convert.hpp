#pragma once
#include <cstdint>

namespace tapeflow::cpu {

/**
 * to[i] = from[i] rounded to the nearest bfloat16 (ties to even), as the
 * bits of a bfloat16, split over the intra-op threads. Needs AVX512-BF16:
 * call it only where precision.hpp's multiply_in_bf16() holds.
 */
void convert_to_bf16(const float* from, uint16_t* to, int64_t n);

}  // namespace tapeflow::cpu
