// Fused optimizer updates on the GPU: one pass over memory per step, with
// core/optim_update.hpp's per-element formulas (the CPU kernel's, in the
// same order). apply_in_place (optim/apply_ops.hpp) hands over dense inputs
// of one shape and dtype, and writes go into them.
#include "check.hpp"
#include "context.hpp"
#include "core/dtype_dispatch.hpp"
#include "core/optim_update.hpp"
#include "grid.cuh"
#include "optim/apply_ops.hpp"

namespace tapeflow::cuda {
namespace {

template <class T>
__global__ void gradient_descent_kernel(int64_t n, T lr, T* w, const T* g) {
  for (int64_t i = grid_first(); i < n; i += grid_step())
    w[i] = gradient_descent_update(w[i], g[i], lr);
}

template <class T>
__global__ void adam_kernel(int64_t n, AdamConstants<T> k, T* w, const T* g,
                            T* m, T* v) {
  for (int64_t i = grid_first(); i < n; i += grid_step()) {
    T wi = w[i], mi = m[i], vi = v[i];
    adam_update(wi, g[i], mi, vi, k.alpha, k.c1, k.c2, k.eps);
    m[i] = mi;
    v[i] = vi;
    w[i] = wi;
  }
}

void gradient_descent(const ApplyGradientDescent& op, Inputs in,
                      const Outputs&) {
  const int64_t n = in[0].numel();
  if (n == 0) return;
  dispatch_floating(in[0].dtype(), op.name, [&](auto tag) {
    using T = decltype(tag);
    gradient_descent_kernel<T>
        <<<blocks_for(n), kBlockThreads, 0, activate(in[0].device().index)>>>(
            n, static_cast<T>(op.lr), in[0].data<T>(), in[1].data<T>());
    TAPEFLOW_CUDA_CHECK(cudaGetLastError());
  });
}

void adam(const ApplyAdam& op, Inputs in, const Outputs&) {
  const int64_t n = in[0].numel();
  if (n == 0) return;
  dispatch_floating(in[0].dtype(), op.name, [&](auto tag) {
    using T = decltype(tag);
    const AdamConstants<T> k(op.alpha, op.beta_1, op.beta_2, op.epsilon);
    adam_kernel<T>
        <<<blocks_for(n), kBlockThreads, 0, activate(in[0].device().index)>>>(
            n, k, in[0].data<T>(), in[1].data<T>(), in[2].data<T>(),
            in[3].data<T>());
    TAPEFLOW_CUDA_CHECK(cudaGetLastError());
  });
}

}  // namespace

void register_optim_updates(Registry& r) {
  r.set<ApplyGradientDescent>(DeviceType::cuda, gradient_descent, "cuda");
  r.set<ApplyAdam>(DeviceType::cuda, adam, "cuda");
}

}  // namespace tapeflow::cuda
