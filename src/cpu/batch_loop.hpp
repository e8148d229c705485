#pragma once
// One xsimd pass over n elements, split across threads: the loop of the
// fused kernels whose steps read and write several arrays at one index (the
// optimizer updates, the LSTM cell).
#include <type_traits>

#include "cpu/parallel.hpp"
#include "cpu/xsimd_config.hpp"

namespace tapeflow::cpu {

/**
 * Calls step<batch>(i) and step<T>(i) over [0, n). `step` should capture its
 * pointers and constants by value: each thread runs a private copy, whose
 * fields the compiler then keeps in registers. Read through a reference, they
 * are reloaded after every store, as xsimd's stores may alias anything.
 */
template <class T, class Step>
void for_each_batch(int64_t n, const Step& step) {
  using B = xsimd::batch<T>;
  constexpr int64_t W = B::size;
  parallel_for(n, kParallelGrain, [&](int64_t begin, int64_t end) {
    const Step local = step;
    int64_t i = begin;
    for (; i + W <= end; i += W) local.template operator()<B>(i);
    for (; i < end; ++i) local.template operator()<T>(i);
  });
}

// load_at and store_at, not load and store: a batch argument brings xsimd's
// own store(T*, batch) into argument lookup, which wins overload resolution
// and stores aligned, faulting where a thread's range starts off a boundary.
template <class V, class T>
V load_at(const T* p) {
  if constexpr (std::is_arithmetic_v<V>)
    return *p;
  else
    return V::load_unaligned(p);
}
template <class V, class T>
void store_at(T* p, const V& v) {
  if constexpr (std::is_arithmetic_v<V>)
    *p = v;
  else
    v.store_unaligned(p);
}

}  // namespace tapeflow::cpu
