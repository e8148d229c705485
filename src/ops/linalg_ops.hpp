#pragma once
#include "ops/op.hpp"

namespace tapeflow {

/**
 * Batched matmul of (..., M, K) and (..., K, N); batch axes broadcast. The
 * kernel may leave its operands as it converted them (bfloat16 under float32
 * precision `medium`); the products of the gradient, which read the same
 * operands transposed, take them from `converted`.
 */
struct MatMul {
  static constexpr const char* name = "matmul";
  static constexpr int save = kSaveInputs;
  PayloadPtr converted = nullptr;
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
