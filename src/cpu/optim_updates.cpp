// Fused optimizer updates on the CPU: one xsimd pass, split across threads,
// of core/optim_update.hpp's formulas (which the CUDA kernels share).
#include "core/dtype_dispatch.hpp"
#include "core/optim_update.hpp"
#include "cpu/batch_loop.hpp"
#include "optim/apply_ops.hpp"

namespace tapeflow::cpu {
namespace {

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
