#pragma once
// Row functions for run_elementwise: contiguous rows use xsimd batches
// (float/double), broadcast operands a splatted batch, anything else scalars.
#include "cpu/xsimd_config.hpp"

#include <type_traits>

#include "cpu/strided_loop.hpp"

namespace tapeflow::cpu {

template <class T>
inline constexpr bool kSimd =
    std::is_same_v<T, float> || std::is_same_v<T, double>;

/** out = f(a) for element type T. */
template <class T, class F>
void unary_kernel(const Tensor& x, Tensor& out, F f) {
  const T* a = static_cast<const T*>(x.raw_data());
  T* o = static_cast<T*>(out.raw_data());
  run_elementwise<2>(out, {&x}, [&](const auto& off, int64_t n, const auto& st) {
    T* po = o + off[0];
    const T* pa = a + off[1];
    int64_t i = 0;
    if constexpr (kSimd<T>) {
      if (st[0] == 1 && st[1] == 1) {
        using B = xsimd::batch<T>;
        for (; i + int64_t(B::size) <= n; i += B::size)
          f(B::load_unaligned(pa + i)).store_unaligned(po + i);
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
  run_elementwise<3>(out, {&x, &y}, [&](const auto& off, int64_t n,
                                        const auto& st) {
    R* po = o + off[0];
    const T* pa = a + off[1];
    const T* pb = b + off[2];
    int64_t i = 0;
    if constexpr (kSimd<T> && std::is_same_v<T, R>) {
      using B = xsimd::batch<T>;
      constexpr int64_t W = B::size;
      if (st[0] == 1 && st[1] == 1 && st[2] == 1) {
        for (; i + W <= n; i += W)
          f(B::load_unaligned(pa + i), B::load_unaligned(pb + i))
              .store_unaligned(po + i);
      } else if (st[0] == 1 && st[1] == 1 && st[2] == 0) {
        const B vb(*pb);
        for (; i + W <= n; i += W)
          f(B::load_unaligned(pa + i), vb).store_unaligned(po + i);
      } else if (st[0] == 1 && st[1] == 0 && st[2] == 1) {
        const B va(*pa);
        for (; i + W <= n; i += W)
          f(va, B::load_unaligned(pb + i)).store_unaligned(po + i);
      }
    }
    for (; i < n; ++i) po[i * st[0]] = f(pa[i * st[1]], pb[i * st[2]]);
  });
}

}  // namespace tapeflow::cpu
