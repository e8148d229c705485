#pragma once
// Deferred data errors for kernels (CUDA.md §3): a kernel that finds a bad
// index skips it, records the first bad value through its DeferredIndexCheck,
// and the next synchronization of the device (synchronize, a copy to the
// host) throws "[op] expected indices in [lo, hi), got v (on cuda:N,
// reported at synchronization)".
//
//   const DeferredIndexCheck check = deferred_index_check(device, "gather",
//                                                         0, dim_size);
//   kernel<<<grid, block, 0, activate(device)>>>(..., check);
//   ... in the kernel:  if (!check.valid(i)) { out[k] = 0; continue; }
#include <cstdint>
#include <string_view>

#include "core/deferred_error_record.hpp"

namespace tapeflow::cuda {

/** What a kernel needs to check one index range and report a bad value. */
struct DeferredIndexCheck {
  DeferredErrorRecord* record;  // device pointer of the mapped pinned record
  unsigned int* flag;           // the device's claim, in device memory
  unsigned int op;
  long long lo, hi;

  __device__ bool in_range(long long v) const { return v >= lo && v < hi; }

  /** Records `v` unless some thread reported first; later reports are lost. */
  __device__ void report(long long v) const {
    // The claim is in device memory and read before it is tried, so that a
    // kernel full of bad indices does one atomic per thread at most, and
    // none over PCIe.
    if (*static_cast<volatile unsigned int*>(flag) != 0u) return;
    if (atomicCAS(flag, 0u, 1u) != 0u) return;
    record->op = op;
    record->value = v;
    record->lo = lo;
    record->hi = hi;
    // `claimed` last: whoever sees it set sees the fields.
    __threadfence_system();
    atomicExch(&record->claimed, 1u);
  }

  /** in_range(v), reporting v when it is not. */
  __device__ bool valid(long long v) const {
    if (in_range(v)) return true;
    report(v);
    return false;
  }
};

/** The check for kernels of `op` on `device` whose indices lie in [lo, hi). */
DeferredIndexCheck deferred_index_check(int device, std::string_view op,
                                        int64_t lo, int64_t hi);

/**
 * Throws the IndexError a kernel on `device` reported, if any. Call only
 * after the device's stream is synchronized (the backend's sync points do).
 */
void raise_deferred_errors(int device);

}  // namespace tapeflow::cuda
