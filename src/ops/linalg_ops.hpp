#pragma once
#include "ops/elementwise_ops.hpp"

namespace tapeflow {

/** Batched matmul of (..., M, K) and (..., K, N); batch axes broadcast. */
struct MatMul {
  static constexpr const char* name = "matmul";
  static constexpr int save = kSaveInputs;
  TensorSpec infer(Inputs in) const;
  Grads vjp(const VjpArgs& a) const;
};
struct MatrixInverse {
  static constexpr const char* name = "matrix_inverse";
  static constexpr int save = kSaveOutput;
  TensorSpec infer(Inputs in) const { return {in[0].shape(), in[0].dtype()}; }
  Grads vjp(const VjpArgs& a) const;
};
struct MatrixDeterminant {
  static constexpr const char* name = "matrix_determinant";
  static constexpr int save = kSaveInputs | kSaveOutput;
  TensorSpec infer(Inputs in) const;
  Grads vjp(const VjpArgs& a) const;
};

}  // namespace tapeflow
