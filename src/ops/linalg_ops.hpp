#pragma once
#include <memory>

#include "ops/converted_operand.hpp"
#include "ops/elementwise_ops.hpp"

namespace tapeflow {

/**
 * The operands of a recorded matmul as its kernel converted them (to
 * bfloat16 under float32 precision `medium`), for the two products of its
 * gradient, which read the same operands transposed.
 */
struct MatMulHandoff {
  ConvertedOperand a, b;
};

/** Batched matmul of (..., M, K) and (..., K, N); batch axes broadcast. */
struct MatMul {
  static constexpr const char* name = "matmul";
  static constexpr int save = kSaveInputs;
  std::shared_ptr<MatMulHandoff> leave = nullptr;  // gets converted operands
  std::shared_ptr<MatMulHandoff> take = nullptr;   // supplies them
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
