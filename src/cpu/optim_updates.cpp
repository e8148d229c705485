// Fused optimizer updates on the CPU: one xsimd pass, split across threads,
// of core/optim_update.hpp's formulas (which the CUDA kernels share).
#include "core/dtype_dispatch.hpp"
#include "core/optim_update.hpp"
#include "cpu/parallel.hpp"
#include "cpu/xsimd_config.hpp"
#include "optim/apply_ops.hpp"

namespace tapeflow::cpu {
namespace {

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

void gradient_descent(const ApplyGradientDescent& op, Inputs in,
                      const Outputs&) {
  dispatch_floating(in[0].dtype(), op.name, [&](auto tag) {
    using T = decltype(tag);
    T* w = in[0].data<T>();
    const T* g = in[1].data<T>();
    const T lr = static_cast<T>(op.lr);
    for_each_batch<T>(in[0].numel(), [=]<class V>(int64_t i) {
      store_at(w + i, gradient_descent_update(load_at<V>(w + i),
                                              load_at<V>(g + i), V(lr)));
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
    const AdamConstants<T> k(op.alpha, op.beta_1, op.beta_2, op.epsilon);
    for_each_batch<T>(in[0].numel(), [=]<class V>(int64_t i) {
      V wi = load_at<V>(w + i), mi = load_at<V>(m + i), vi = load_at<V>(v + i);
      adam_update(wi, load_at<V>(g + i), mi, vi, V(k.alpha), V(k.c1), V(k.c2),
                  V(k.eps));
      store_at(m + i, mi);
      store_at(v + i, vi);
      store_at(w + i, wi);
    });
  });
}

}  // namespace

void register_optim_updates(Registry& r) {
  r.set<ApplyGradientDescent>(DeviceType::cpu, gradient_descent, "xsimd");
  r.set<ApplyAdam>(DeviceType::cpu, adam, "xsimd");
}

}  // namespace tapeflow::cpu
