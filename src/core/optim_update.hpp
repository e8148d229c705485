#pragma once
// The per-element formulas of the fused optimizer updates
// (optim/apply_ops.hpp), shared by the CPU kernel (cpu/optim_updates.cpp,
// with V a scalar or an xsimd batch) and the CUDA one, so that both apply
// the same operations in the same order. Every multiply feeding an add is
// an explicit fma: g++ and nvcc contract a plain a * b + c where they choose
// (the -march, the optimization level, sanitizers), which moved an update
// by thousands of ulps where its terms cancel; written out, the CPU's vector
// and scalar paths and the GPU round alike, bit for bit.
#include <cmath>

#include "core/host_device.hpp"

namespace tapeflow {

/** a * b + c rounded once, for scalars on either side and xsimd batches. */
template <class V>
TPF_HOST_DEVICE inline V multiply_add(const V& a, const V& b, const V& c) {
#ifdef __CUDA_ARCH__
  return fma(a, b, c);
#else
  using std::fma;  // xsimd's fma for batches, found by argument lookup
  return fma(a, b, c);
#endif
}

/** Gradient descent: w - lr * g. */
template <class V>
TPF_HOST_DEVICE inline V gradient_descent_update(const V& w, const V& g,
                                                 const V& lr) {
  return multiply_add(V(-lr), g, w);
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
  m = multiply_add(V(g - m), c1, m);
  v = multiply_add(multiply_add(g, g, V(-v)), c2, v);
  w = w - alpha * m / (sqrt(v) + eps);
}

}  // namespace tapeflow
