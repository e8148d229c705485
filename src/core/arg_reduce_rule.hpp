#pragma once
// argmax / argmin's choice between two candidates, shared by the CPU's rule
// (cpu/reduce.cpp: a scan from the first element that moves to a strictly
// better value or to the first NaN) and the CUDA kernel, which scans strided
// shares of the axis in parallel and then merges them in a tree. Ordering
// candidates by (better value, then lower index), with NaN above every
// number and equal to another NaN, makes the merge associative and
// commutative, and its winner is the scan's: the first NaN if there is one,
// else the first extreme.
#include <cstdint>

#include "core/host_device.hpp"

namespace tapeflow {

/** A value at an index of the reduced axis; index < 0: no candidate. */
template <class T>
struct ArgCandidate {
  T value;
  int64_t index;
};

/** Whether v ranks above `best` for argmax (kMax) or argmin. */
template <bool kMax, class T>
TPF_HOST_DEVICE inline bool arg_beats(T v, T best) {
  const bool nan_v = v != v, nan_best = best != best;
  if (nan_v || nan_best) return nan_v && !nan_best;
  return kMax ? v > best : v < best;
}

/** The candidate that ranks first; equal ranks go to the lower index. */
template <bool kMax, class T>
TPF_HOST_DEVICE inline ArgCandidate<T> arg_better(const ArgCandidate<T>& a,
                                                  const ArgCandidate<T>& b) {
  if (a.index < 0) return b;
  if (b.index < 0) return a;
  if (arg_beats<kMax>(b.value, a.value)) return b;
  if (arg_beats<kMax>(a.value, b.value)) return a;
  return b.index < a.index ? b : a;
}

}  // namespace tapeflow
