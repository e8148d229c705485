// How a matrix product's operand lies in memory: the last two axes of a
// tensor read as one row- or column-major matrix with a leading dimension, as
// BLAS-style GEMMs take it, and the offset of each matrix of a broadcast batch.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>

#include "tapeflow/core/tensor.hpp"

namespace tapeflow::cpu {

/** Products of at least this many multiply-adds are split over threads. */
inline constexpr int64_t kParallelMacs = int64_t{1} << 20;

struct MatrixLayout {
  bool column_major = false;  // element (i, j) at i + j * ld, else i * ld + j
  int64_t ld = 1;
};

/**
 * The last two axes of `t` as one GEMM operand, or nullopt when they are
 * neither row- nor column-major (a broadcast row, a stride in both axes).
 * A single row or column has no second stride to check: its one stride
 * chooses the layout.
 */
inline std::optional<MatrixLayout> matrix_layout(const Tensor& t) {
  const int64_t r = t.rank();
  const int64_t rows = t.shape()[r - 2], cols = t.shape()[r - 1];
  const int64_t s0 = t.strides()[r - 2], s1 = t.strides()[r - 1];
  if (s1 == 1 || cols == 1) {
    if (rows == 1) return MatrixLayout{false, std::max<int64_t>(cols, 1)};
    if (s0 >= std::max<int64_t>(cols, 1)) return MatrixLayout{false, s0};
  }
  if (s0 == 1 || rows == 1) {
    if (cols == 1) return MatrixLayout{true, std::max<int64_t>(rows, 1)};
    if (s1 >= std::max<int64_t>(rows, 1)) return MatrixLayout{true, s1};
  }
  return std::nullopt;
}

/** Offset of batch index k of `t` within the broadcast batch shape of out. */
inline int64_t batch_offset(const Tensor& t, const Shape& out_batch,
                            int64_t k) {
  int64_t off = 0;
  const int64_t lead = out_batch.size() - (t.rank() - 2);
  for (int64_t i = out_batch.size() - 1; i >= 0; --i) {
    const int64_t idx = k % out_batch[i];
    k /= out_batch[i];
    if (i >= lead && t.shape()[i - lead] != 1)
      off += idx * t.strides()[i - lead];
  }
  return off;
}

}  // namespace tapeflow::cpu
