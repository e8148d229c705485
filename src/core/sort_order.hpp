#pragma once
// The order of sort and argsort, shared by the CPU kernel (a stable sort of
// each line) and the CUDA kernel (merge passes over every line at once): NaN
// above every number and equal to another NaN (last ascending, first
// descending, as PyTorch), -0 equal to +0, and equal keys in the order of
// their indices. That makes (key, index) a total order, so any correct sort
// gives the same permutation: the CPU's and the GPU's are the same.
#include <cstdint>

#include "core/host_device.hpp"

namespace tapeflow {

/** Whether key a sorts strictly before key b. */
template <class T>
TPF_HOST_DEVICE inline bool sorts_before(T a, T b, bool descending) {
  const bool nan_a = a != a, nan_b = b != b;
  if (nan_a || nan_b) return descending ? nan_a && !nan_b : nan_b && !nan_a;
  return descending ? b < a : a < b;
}

/** Whether (a, index_a) sorts before (b, index_b): keys first, then index. */
template <class T>
TPF_HOST_DEVICE inline bool entry_before(T a, int64_t index_a, T b,
                                         int64_t index_b, bool descending) {
  if (sorts_before(a, b, descending)) return true;
  if (sorts_before(b, a, descending)) return false;
  return index_a < index_b;
}

/**
 * Where the entry at position p of a line of n entries goes in a merge pass
 * of `width`: the line holds sorted runs of `width` entries (the last one
 * shorter), and each even run merges with the odd run after it. The entry
 * keeps its rank in its own run and adds the number of the partner run's
 * entries that sort before it (a binary search), so that every entry of a
 * pass moves at once, each to a place no other entry takes.
 */
template <class T>
TPF_HOST_DEVICE inline int64_t merged_position(const T* keys,
                                               const int64_t* indices,
                                               int64_t n, int64_t p,
                                               int64_t width, bool descending) {
  const int64_t run_start = p / width * width;
  const int64_t partner_start = run_start ^ width;  // run_start / width ^ 1
  if (partner_start >= n) return p;
  const int64_t partner_end =
      partner_start + width < n ? partner_start + width : n;
  int64_t lo = partner_start, hi = partner_end;
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (entry_before(keys[mid], indices[mid], keys[p], indices[p], descending))
      lo = mid + 1;
    else
      hi = mid;
  }
  const int64_t pair_start =
      run_start < partner_start ? run_start : partner_start;
  return pair_start + (p - run_start) + (lo - partner_start);
}

}  // namespace tapeflow
