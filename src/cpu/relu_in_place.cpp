#include "cpu/relu_in_place.hpp"

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

template <class T>
void rectify_parallel(T* p, int64_t n) {
  parallel_for(n, kParallelGrain, [p](int64_t begin, int64_t end) {
    rectify(p + begin, end - begin);
  });
}

}  // namespace

void relu_in_place(float* p, int64_t n) {
  rectify(p, n);
}
void relu_in_place(double* p, int64_t n) {
  rectify(p, n);
}

void relu_in_place(const Tensor& t) {
  if (t.dtype() == float32)
    rectify_parallel(static_cast<float*>(t.raw_data()), t.numel());
  else
    rectify_parallel(static_cast<double*>(t.raw_data()), t.numel());
}

}  // namespace tapeflow::cpu
