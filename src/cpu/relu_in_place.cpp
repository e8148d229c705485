#include "cpu/relu_in_place.hpp"

#include "core/dtype_dispatch.hpp"
#include "cpu/functors.hpp"
#include "cpu/parallel.hpp"

namespace tapeflow::cpu {
namespace {

template <class T>
void rectify(T* p, int64_t n) {
  using V = xsimd::batch<T>;
  constexpr int64_t kWidth = V::size;
  int64_t i = 0;
  for (; i + kWidth <= n; i += kWidth) {
    const V v = V::load_unaligned(p + i);
    pick(v <= V(0), V(0), v).store_unaligned(p + i);
  }
  for (; i < n; ++i) p[i] = pick(p[i] <= T(0), T(0), p[i]);
}

}  // namespace

void relu_in_place(float* p, int64_t n) {
  rectify(p, n);
}

void relu_in_place(const Tensor& t) {
  dispatch_floating(t.dtype(), "conv_relu", [&](auto tag) {
    using T = decltype(tag);
    T* p = t.data<T>();
    parallel_for(t.numel(), kParallelGrain, [p](int64_t begin, int64_t end) {
      rectify(p + begin, end - begin);
    });
  });
}

}  // namespace tapeflow::cpu
