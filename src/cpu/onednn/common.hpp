// What the oneDNN kernels (conv.cpp, matmul.cpp, pool.cpp) share: the one CPU
// engine, the calling thread's stream on it, the OpenMP thread count oneDNN
// runs with, and the hash of their primitive caches' int64 keys.
#pragma once

#include <omp.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <dnnl.hpp>
#include <functional>
#include <span>
#include <vector>

#include "tapeflow/config.hpp"

namespace tapeflow::cpu::onednn {

/**
 * The CPU engine of every oneDNN primitive and memory object. An inline
 * function with external linkage: its static is one object across
 * translation units, made on first use.
 */
inline dnnl::engine& engine() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}

/** The calling thread's stream on engine(): in order, waited on per call. */
inline dnnl::stream& stream() {
  thread_local dnnl::stream s(engine());
  return s;
}

/**
 * The threads a oneDNN call runs on. oneDNN makes a primitive for the
 * threads OpenMP's setting names and runs it on the team OpenMP gives, and
 * a primitive given fewer threads than it was made for waits at its own
 * barriers forever (a filter gradient hung): so 1 inside a caller's OpenMP
 * region, where oneDNN runs any primitive on its calling thread alone, and
 * never more than OMP_THREAD_LIMIT (sync_threads turns OMP_DYNAMIC off).
 */
inline int call_threads() {
  if (omp_in_parallel()) return 1;
  return std::min(config::intra_op_threads(), omp_get_thread_limit());
}

/**
 * Call before making or executing a primitive: oneDNN reads the calling
 * thread's OpenMP setting (which set_intra_op_threads made on another thread
 * may not have reached, and which the adaptation to load does not change),
 * and a primitive keeps the thread count it was made with: one made for a
 * 1-thread key under a setting of 2 ran 2 threads beside a busy process.
 */
inline void sync_threads(int threads = call_threads()) {
  if (omp_get_max_threads() != threads) omp_set_num_threads(threads);
  // OMP_DYNAMIC lets OpenMP start smaller teams than asked when the machine
  // is busy: a primitive would then wait for threads that never come. Off
  // for this thread, from its first oneDNN call on.
  if (omp_get_dynamic()) omp_set_dynamic(0);
}

/** FNV-style fold of int64 values into `h`, for the primitive caches' keys. */
inline size_t hash_int64s(std::span<const int64_t> values, size_t h = 0) {
  for (int64_t v : values) h = h * 1099511628211ull ^ std::hash<int64_t>()(v);
  return h;
}

/** hash_int64s as the hasher of a cache keyed by a vector of int64. */
struct Int64sHash {
  size_t operator()(const std::vector<int64_t>& key) const {
    return hash_int64s(key);
  }
};

}  // namespace tapeflow::cpu::onednn
