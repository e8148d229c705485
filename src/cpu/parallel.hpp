#pragma once
#include <omp.h>

#include <algorithm>
#include <cstdint>

#include "tapeflow/config.hpp"

namespace tapeflow::cpu {

/** Below this many elements a kernel runs on the calling thread alone. */
inline constexpr int64_t kParallelGrain = 1 << 15;

/**
 * Calls body(begin, end) over [0, n) split into one contiguous chunk per
 * thread; small ranges stay on the caller with no thread start-up at all.
 */
template <class Body>
void parallel_for(int64_t n, int64_t grain, Body&& body) {
  if (n < 2 * grain) {
    if (n > 0) body(int64_t{0}, n);
    return;
  }
  const int threads = static_cast<int>(std::min<int64_t>(
      config::intra_op_threads(), std::max<int64_t>(1, n / grain)));
  if (threads <= 1) {
    if (n > 0) body(int64_t{0}, n);
    return;
  }
#pragma omp parallel num_threads(threads)
  {
    const int64_t t = omp_get_thread_num();
    const int64_t nt = omp_get_num_threads();
    const int64_t chunk = (n + nt - 1) / nt;
    const int64_t begin = std::min(n, t * chunk);
    const int64_t end = std::min(n, begin + chunk);
    if (begin < end) body(begin, end);
  }
}

}  // namespace tapeflow::cpu
