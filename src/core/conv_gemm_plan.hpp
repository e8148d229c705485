#pragma once
// The two cuBLAS paths of the GPU convolutions (design: CUDA.md §4 "Conv",
// paths 2 and 3) as data: each pass is a list of BlasGemm calls, in
// cublasGemmStridedBatchedEx's column-major terms, over the pass's operands
// and scratch buffers, plus the per-element bodies of the kernels around
// them (im2col, gather-col2im, the permute of dy, the bias pre-fill). The
// CUDA code translates each BlasGemm into one cuBLAS call; CI's host test
// runs the same lists through a naive column-major GEMM and compares with
// the direct float64 kernels, so the leading dimensions, offsets,
// transposes and batch strides are checked without a GPU.
#include <cstdint>
#include <limits>
#include <optional>
#include <vector>

#include "core/conv_index.hpp"

namespace tapeflow {

/**
 * The buffers a GEMM path touches: the pass's x-, filter- and y-shaped
 * operands (one of them the output), the col buffer (K, images, P)
 * row-major, and wgrad's dy of one group and chunk gathered (og, images·P).
 */
enum class ConvBuffer { x, w, y, col, gathered_dy };

/**
 * A matrix in a buffer, row-major: element (i, j) of batch entry b at
 * offset + b·stride + i·ld + j, or at offset + b·stride + j·ld + i when
 * `transposed` (a column-major matrix, or the transpose of a row-major one).
 */
struct MatrixRef {
  ConvBuffer buffer = ConvBuffer::x;
  int64_t offset = 0, ld = 1, stride = 0;
  bool transposed = false;
};

/** The same elements seen as the transposed matrix. */
inline MatrixRef transpose(MatrixRef m) {
  m.transposed = !m.transposed;
  return m;
}

/**
 * The rows × cols matrix whose (i, j) lies at i·row_stride + j·col_stride,
 * when one of the strides is 1 and the other leaves rows apart (an axis of
 * extent 1 takes any stride); none otherwise (broadcast or interleaved).
 */
inline std::optional<MatrixRef> strided_matrix(ConvBuffer buffer,
                                               int64_t offset, int64_t rows,
                                               int64_t cols, int64_t row_stride,
                                               int64_t col_stride,
                                               int64_t batch_stride = 0) {
  if (cols == 1 || col_stride == 1) {
    const int64_t ld = rows == 1 ? cols : row_stride;
    if (ld >= cols) return MatrixRef{buffer, offset, ld, batch_stride, false};
  }
  if (rows == 1 || row_stride == 1) {
    const int64_t ld = cols == 1 ? rows : col_stride;
    if (ld >= rows) return MatrixRef{buffer, offset, ld, batch_stride, true};
  }
  return std::nullopt;
}

/**
 * The one stride by which `count` nested axes (outermost first) walk as a
 * single flat axis, axes of extent 1 aside (1 when all are); none when
 * they do not nest or one of them is broadcast (stride 0: the gradient of a
 * sum is such a view, and cuBLAS would read one element as many).
 */
inline std::optional<int64_t> flat_stride(const int64_t* extent,
                                          const int64_t* strides, int count) {
  int64_t step = 0, next = 0;
  for (int d = count - 1; d >= 0; --d) {
    if (extent[d] == 1) continue;
    if (strides[d] == 0) return std::nullopt;
    if (next != 0 && strides[d] != next) return std::nullopt;
    if (next == 0) step = strides[d];
    next = strides[d] * extent[d];
  }
  if (next == 0) return 1;
  return step;
}

/** One operand of a cuBLAS call: where, how it is read, batch stride. */
struct BlasOperand {
  ConvBuffer buffer = ConvBuffer::x;
  int64_t offset = 0, ld = 1, stride = 0;
  bool transposed = false;  // CUBLAS_OP_T
};

/**
 * cublasGemmStridedBatchedEx's arguments, column-major: for each batch
 * entry, C (m × n) = op(A) (m × k) · op(B) (k × n) [+ C when accumulate].
 */
struct BlasGemm {
  BlasOperand a, b, c;
  int64_t m = 0, n = 0, k = 0, batch = 1;
  bool accumulate = false;
};

/**
 * Row-major C (m × n) = A (m × k) · B (k × n) as a column-major call. A
 * row-major C is the column-major Cᵀ = Bᵀ·Aᵀ, so the operands swap; a
 * transposed C is column-major as it is.
 */
inline BlasGemm row_major_gemm(int64_t m, int64_t n, int64_t k, MatrixRef a,
                               MatrixRef b, MatrixRef c, int64_t batch,
                               bool accumulate) {
  const auto as_operand = [](const MatrixRef& r, bool op_t) {
    return BlasOperand{r.buffer, r.offset, r.ld, r.stride, op_t};
  };
  BlasGemm call;
  call.k = k;
  call.batch = batch;
  call.accumulate = accumulate;
  call.c = as_operand(c, false);
  if (c.transposed) {
    call.m = m;
    call.n = n;
    call.a = as_operand(a, !a.transposed);
    call.b = as_operand(b, !b.transposed);
  } else {
    call.m = n;
    call.n = m;
    call.a = as_operand(b, b.transposed);
    call.b = as_operand(a, a.transposed);
  }
  return call;
}

/** Whether cuBLAS's int arguments hold every size and leading dimension. */
inline bool fits_blas(const BlasGemm& call) {
  constexpr int64_t kMax = std::numeric_limits<int>::max();
  for (int64_t v :
       {call.m, call.n, call.k, call.batch, call.a.ld, call.b.ld, call.c.ld})
    if (v > kMax) return false;
  return true;
}

/** The filter of one group as the (og, cg·∏k) matrix, when it is one. */
inline std::optional<MatrixRef> group_filter_matrix(const ConvGeometry& g,
                                                    int64_t group) {
  const int64_t extent[4] = {g.cg, g.k[0], g.k[1], g.k[2]};
  const auto inner = flat_stride(extent, g.w_strides + 1, 4);
  if (!inner) return std::nullopt;
  return strided_matrix(ConvBuffer::w, group * g.og * g.w_strides[0], g.og,
                        g.cg * g.k_size(), g.w_strides[0], *inner);
}

/**
 * Image n0's channels [c0, c0 + channels) of an x- or y-shaped operand as
 * the (channels, positions) matrix, batched over images, when it is one.
 */
inline std::optional<MatrixRef> image_matrix(ConvBuffer buffer,
                                             const int64_t* extent,
                                             const int64_t* strides, int64_t n0,
                                             int64_t c0, int64_t channels) {
  const auto inner = flat_stride(extent, strides + 2, 3);
  if (!inner) return std::nullopt;
  return strided_matrix(buffer, n0 * strides[0] + c0 * strides[1], channels,
                        extent[0] * extent[1] * extent[2], strides[1], *inner,
                        strides[0]);
}

/**
 * Path 2, 1×1 with stride 1 and no padding: x is its own col matrix.
 * Per group: forward Y_n = W_g·X_n and dgrad dX_n = W_gᵀ·dY_n batched over
 * the images; wgrad dW_g = Σ_n dY_n·X_nᵀ, one GEMM when (image, position)
 * walks x and dy as one axis (channels-last), else one per image adding
 * up in image order. Empty when an operand is no matrix.
 */
std::vector<BlasGemm> gemm_1x1_forward(const ConvGeometry& g, int64_t group,
                                       bool accumulate);
std::vector<BlasGemm> gemm_1x1_grad_input(const ConvGeometry& g, int64_t group);
std::vector<BlasGemm> gemm_1x1_grad_filter(const ConvGeometry& g,
                                           int64_t group);

/**
 * Path 3, im2col, for group `group` and images [n0, n0 + images) with the
 * col buffer filled by im2col_entry: forward Y_b = W_g·col_b batched over
 * the images; dgrad col_b = W_gᵀ·dY_b (col2im_entry then gathers dx);
 * wgrad dW_g (+)= gathered_dy·colᵀ, accumulating after the first chunk.
 * Empty when an operand is no matrix.
 */
std::vector<BlasGemm> im2col_forward(const ConvGeometry& g, int64_t group,
                                     int64_t n0, int64_t images,
                                     bool accumulate);
std::vector<BlasGemm> im2col_grad_input(const ConvGeometry& g, int64_t group,
                                        int64_t n0, int64_t images);
std::vector<BlasGemm> im2col_grad_filter(const ConvGeometry& g, int64_t group,
                                         int64_t n0, int64_t images);

// ---- per-element bodies of the kernels around the GEMMs ----

/** Entry j of one row of col (row-major (K, images·P)) from x. */
template <class T>
TPF_HOST_DEVICE void im2col_entry(const Im2col& m, const Im2colRow& row,
                                  const ColumnSplit& split, const T* x,
                                  T* col_row, uint32_t j) {
  const int64_t at = m(row, split, j);
  col_row[j] = at < 0 ? T(0) : x[at];
}

/** dx element e of a group and chunk: the sum of its col entries. */
template <class T>
TPF_HOST_DEVICE void col2im_entry(const Col2imGather& m,
                                  const InputSplit& split, const T* col, T* dx,
                                  uint32_t e) {
  const int64_t cols = m.images * m.g.out_size();
  const Col2imElement el = m.element(split, e);
  T sum = T(0);
  m.for_each_source(
      el, [&](int64_t row, int64_t j) { sum += col[row * cols + j]; });
  dx[m.target(el)] = sum;
}

/** Entry j of row o of gathered_dy (og, images·P), row-major, from dy. */
template <class T>
TPF_HOST_DEVICE void gather_dy_entry(const GroupOutput& m,
                                     const ColumnSplit& split, const T* dy,
                                     T* gathered_row, int64_t o, uint32_t j) {
  gathered_row[j] = dy[m(o, split, j)];
}

/** Position p of y's plane (image, out-channel) = (plane / o, plane % o):
 * the out-channel's bias. */
template <class T>
TPF_HOST_DEVICE void bias_fill_entry(const ConvGeometry& g,
                                     const ColumnSplit& split, const T* bias,
                                     int64_t bias_stride, T* y, int64_t plane,
                                     uint32_t p) {
  const int64_t image = plane / g.o, o = plane % g.o;
  y[image * g.y_strides[0] + o * g.y_strides[1] +
    position_offset(split, p, g.y_strides + 2)] = bias[o * bias_stride];
}

}  // namespace tapeflow
