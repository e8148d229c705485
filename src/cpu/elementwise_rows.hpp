#pragma once
// Row functions for run_elementwise: contiguous rows use xsimd batches
// (float/double), broadcast operands a splatted batch. The other element
// types (integers, bools, comparisons into bool_) run contiguous and
// broadcast rows as unit-stride loops, which the compiler vectorizes (a
// float32 compare into bool_ ~3x faster than the strided form); anything else
// is a strided scalar loop.
#include <immintrin.h>

#include <type_traits>

#include "cpu/strided_loop.hpp"
#include "cpu/xsimd_config.hpp"

namespace tapeflow::cpu {

template <class T>
inline constexpr bool kSimd =
    std::is_same_v<T, float> || std::is_same_v<T, double>;

/** Outputs larger than this are written around the cache (see store_row). */
inline constexpr int64_t kStreamingBytes = int64_t{8} << 20;

// Non-temporal stores of one register, by width (overloads, so that each
// width's intrinsic is only named where the build has it).
inline void stream(float* p, __m128 v) {
  _mm_stream_ps(p, v);
}
inline void stream(double* p, __m128d v) {
  _mm_stream_pd(p, v);
}
#if defined(__AVX__)
inline void stream(float* p, __m256 v) {
  _mm256_stream_ps(p, v);
}
inline void stream(double* p, __m256d v) {
  _mm256_stream_pd(p, v);
}
#endif
#if defined(__AVX512F__)
inline void stream(float* p, __m512 v) {
  _mm512_stream_ps(p, v);
}
inline void stream(double* p, __m512d v) {
  _mm512_stream_pd(p, v);
}
#endif

/**
 * Writes n results f(i) (as batches) to contiguous `out`. Rows of a large
 * output use non-temporal stores: the destination lines are not read first,
 * which saves a third of the memory traffic of c = a + b, and the output does
 * not evict the inputs from the cache.
 */
template <class T, class BatchAt, class ScalarAt>
void store_row(T* out, int64_t n, bool streaming, BatchAt batch_at,
               ScalarAt scalar_at) {
  using B = xsimd::batch<T>;
  constexpr int64_t W = B::size;
  int64_t i = 0;
  if (streaming) {
    constexpr uintptr_t align = sizeof(B);
    for (; i < n && reinterpret_cast<uintptr_t>(out + i) % align; ++i)
      out[i] = scalar_at(i);
    for (; i + W <= n; i += W) stream(out + i, batch_at(i).data);
    _mm_sfence();
  } else {
    for (; i + W <= n; i += W) batch_at(i).store_unaligned(out + i);
  }
  for (; i < n; ++i) out[i] = scalar_at(i);
}

/** out = f(a) for element type T. */
template <class T, class F>
void unary_kernel(const Tensor& x, Tensor& out, F f) {
  const T* a = static_cast<const T*>(x.raw_data());
  T* o = static_cast<T*>(out.raw_data());
  const bool streaming = out.numel() * int64_t(sizeof(T)) >= kStreamingBytes;
  run_elementwise<2>(
      out, {&x}, [&](const auto& off, int64_t n, const auto& st) {
        T* po = o + off[0];
        const T* pa = a + off[1];
        int64_t i = 0;
        if constexpr (kSimd<T>) {
          if (st[0] == 1 && st[1] == 1) {
            using B = xsimd::batch<T>;
            store_row<T>(
                po, n, streaming,
                [f, pa](int64_t k) { return f(B::load_unaligned(pa + k)); },
                [f, pa](int64_t k) { return f(pa[k]); });
            return;
          }
        } else {
          if (st[0] == 1 && st[1] == 1) {
            for (; i < n; ++i) po[i] = f(pa[i]);
            return;
          }
        }
        for (; i < n; ++i) po[i * st[0]] = f(pa[i * st[1]]);
      });
}

/** out = f(a, b) for inputs of type T and output of type R. */
template <class T, class R, class F>
void binary_kernel(const Tensor& x, const Tensor& y, Tensor& out, F f) {
  const T* a = static_cast<const T*>(x.raw_data());
  const T* b = static_cast<const T*>(y.raw_data());
  R* o = static_cast<R*>(out.raw_data());
  const bool streaming = out.numel() * int64_t(sizeof(R)) >= kStreamingBytes;
  run_elementwise<3>(
      out, {&x, &y}, [&](const auto& off, int64_t n, const auto& st) {
        R* po = o + off[0];
        const T* pa = a + off[1];
        const T* pb = b + off[2];
        int64_t i = 0;
        if constexpr (kSimd<T> && std::is_same_v<T, R>) {
          using B = xsimd::batch<T>;
          if (st[0] == 1 && st[1] == 1 && st[2] == 1) {
            store_row<T>(
                po, n, streaming,
                [f, pa, pb](int64_t k) {
                  return f(B::load_unaligned(pa + k),
                           B::load_unaligned(pb + k));
                },
                [f, pa, pb](int64_t k) { return f(pa[k], pb[k]); });
            return;
          }
          if (st[0] == 1 && st[1] == 1 && st[2] == 0) {
            const B vb(*pb);
            store_row<T>(
                po, n, streaming,
                [f, pa, vb](int64_t k) {
                  return f(B::load_unaligned(pa + k), vb);
                },
                [f, pa, pb](int64_t k) { return f(pa[k], *pb); });
            return;
          }
          if (st[0] == 1 && st[1] == 0 && st[2] == 1) {
            const B va(*pa);
            store_row<T>(
                po, n, streaming,
                [f, va, pb](int64_t k) {
                  return f(va, B::load_unaligned(pb + k));
                },
                [f, pa, pb](int64_t k) { return f(*pa, pb[k]); });
            return;
          }
        } else {
          if (st[0] == 1 && st[1] == 1 && st[2] == 1) {
            for (; i < n; ++i) po[i] = f(pa[i], pb[i]);
            return;
          }
          if (st[0] == 1 && st[1] == 1 && st[2] == 0) {
            const T vb = *pb;
            for (; i < n; ++i) po[i] = f(pa[i], vb);
            return;
          }
          if (st[0] == 1 && st[1] == 0 && st[2] == 1) {
            const T va = *pa;
            for (; i < n; ++i) po[i] = f(va, pb[i]);
            return;
          }
        }
        for (; i < n; ++i) po[i * st[0]] = f(pa[i * st[1]], pb[i * st[2]]);
      });
}

}  // namespace tapeflow::cpu
