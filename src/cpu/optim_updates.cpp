// Fused optimizer updates on the CPU: one xsimd pass, split across threads.
#include "core/dtype_dispatch.hpp"
#include "cpu/parallel.hpp"
#include "cpu/xsimd_config.hpp"
#include "optim/apply_ops.hpp"

namespace tapeflow::cpu {
namespace {

template <class T, class Step>
void for_each_batch(int64_t n, Step step) {
  using B = xsimd::batch<T>;
  constexpr int64_t W = B::size;
  parallel_for(n, kParallelGrain, [&](int64_t begin, int64_t end) {
    int64_t i = begin;
    for (; i + W <= end; i += W) step.template operator()<B>(i);
    for (; i < end; ++i) step.template operator()<T>(i);
  });
}

template <class V, class T>
V load(const T* p) {
  if constexpr (std::is_arithmetic_v<V>)
    return *p;
  else
    return V::load_unaligned(p);
}
template <class V, class T>
void store(T* p, const V& v) {
  if constexpr (std::is_arithmetic_v<V>)
    *p = v;
  else
    v.store_unaligned(p);
}

void gradient_descent(const ApplyGradientDescent& op, Inputs in,
                      const Outputs&) {
  dispatch_floating(in[0].dtype(), op.name, [&](auto tag) {
    using T = decltype(tag);
    T* w = in[0].data<T>();
    const T* g = in[1].data<T>();
    const T lr = static_cast<T>(op.lr);
    for_each_batch<T>(in[0].numel(), [&]<class V>(int64_t i) {
      store(w + i, load<V>(w + i) - V(lr) * load<V>(g + i));
    });
  });
}

void adam(const ApplyAdam& op, Inputs in, const Outputs&) {
  dispatch_floating(in[0].dtype(), op.name, [&](auto tag) {
    using T = decltype(tag);
    T* w = in[0].data<T>();
    const T* g = in[1].data<T>();
    T* m = in[2].data<T>();
    T* v = in[3].data<T>();
    const T alpha = T(op.alpha), c1 = T(1 - op.beta_1), c2 = T(1 - op.beta_2),
            eps = T(op.epsilon);
    for_each_batch<T>(in[0].numel(), [&]<class V>(int64_t i) {
      const V gi = load<V>(g + i);
      const V mi = load<V>(m + i) + (gi - load<V>(m + i)) * V(c1);
      const V vi = load<V>(v + i) + (gi * gi - load<V>(v + i)) * V(c2);
      store(m + i, mi);
      store(v + i, vi);
      store(w + i, load<V>(w + i) - V(alpha) * mi / (xsimd::sqrt(vi) + V(eps)));
    });
  });
}

}  // namespace

void register_optim_updates(Registry& r) {
  r.set<ApplyGradientDescent>(DeviceType::cpu, gradient_descent, "xsimd");
  r.set<ApplyAdam>(DeviceType::cpu, adam, "xsimd");
}

}  // namespace tapeflow::cpu
