#pragma once
#include "tapeflow/core/tensor.hpp"

namespace tapeflow {

/**
 * Matrix product over the last two axes; leading (batch) axes broadcast.
 * Transposes are taken as strided views, never copies.
 */
Tensor matmul(const Tensor& a, const Tensor& b, bool transpose_a = false,
              bool transpose_b = false);
/** Inverse of each square matrix in the last two axes (LAPACK getrf/getri). */
Tensor matrix_inverse(const Tensor& x);
/** Determinant of each square matrix in the last two axes. */
Tensor matrix_determinant(const Tensor& x);

}  // namespace tapeflow
