#pragma once
// The per-element formulas of the fused optimizer updates
// (optim/apply_ops.hpp), shared by the CPU kernel (cpu/optim_updates.cpp,
// with V a scalar or an xsimd batch) and the CUDA one, so that both apply
// the same operations in the same order. nvcc contracts a multiply and an
// add into one fma where the CPU rounds twice, so the GPU's result may
// differ in the last bit.
#include <cmath>

#include "core/host_device.hpp"

namespace tapeflow {

/** Gradient descent: w - lr * g. */
template <class V>
TPF_HOST_DEVICE inline V gradient_descent_update(const V& w, const V& g,
                                                 const V& lr) {
  return w - lr * g;
}

/**
 * ApplyAdam's constants in the parameter's type T, each rounded once from
 * the op's double fields: alpha (the bias-corrected learning rate),
 * c1 = 1 - beta_1, c2 = 1 - beta_2 and epsilon.
 */
template <class T>
struct AdamConstants {
  T alpha, c1, c2, eps;
  TPF_HOST_DEVICE AdamConstants(double alpha, double beta_1, double beta_2,
                                double epsilon)
      : alpha(T(alpha)),
        c1(T(1 - beta_1)),
        c2(T(1 - beta_2)),
        eps(T(epsilon)) {}
};

/**
 * One Adam step of an element (or a batch of them, with the constants
 * broadcast into V): m += (g - m) c1; v += (g^2 - v) c2;
 * w -= alpha m / (sqrt(v) + eps).
 */
template <class V>
TPF_HOST_DEVICE inline void adam_update(V& w, const V& g, V& m, V& v,
                                        const V& alpha, const V& c1,
                                        const V& c2, const V& eps) {
  using std::sqrt;  // xsimd's sqrt for batches, found by argument lookup
  m = m + (g - m) * c1;
  v = v + (g * g - v) * c2;
  w = w - alpha * m / (sqrt(v) + eps);
}

}  // namespace tapeflow
