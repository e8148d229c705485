#pragma once
#include <bit>
#include <cstddef>

namespace tapeflow {

/** A caching allocator's block size for a request, and its free-list index. */
struct SizeClass {
  size_t bytes;
  int index;
};

inline constexpr size_t kMinBlock = 64;
inline constexpr int kNumSizeClasses = 4 + (64 - 8) * 4;

// Four classes per power of two (at most 25% slack), indexed densely so that
// the free lists are a plain array.
inline SizeClass size_class(size_t n) {
  if (n <= kMinBlock) return {kMinBlock, 0};
  if (n <= 4 * kMinBlock) {
    const size_t k = (n + kMinBlock - 1) / kMinBlock;  // 2..4
    return {k * kMinBlock, static_cast<int>(k - 1)};
  }
  const int p = std::bit_width(n - 1) - 1;  // 2^p < n <= 2^(p+1), p >= 8
  const size_t step = size_t{1} << (p - 2);
  const size_t q = (n + step - 1) / step;  // 5..8
  return {q * step, 4 + (p - 8) * 4 + static_cast<int>(q - 5)};
}

}  // namespace tapeflow
