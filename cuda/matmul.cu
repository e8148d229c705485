// matmul through cuBLAS (strided-batched gemm); row-major C = A B is computed
// as column-major C^T = B^T A^T, so no operand is ever transposed in memory.
// float32 products take the compute type of float32_matmul_precision()
// (core/gemm_compute.hpp): FP32, TF32 or BF16 tensor cores.
#include "check.hpp"
#include "context.hpp"
#include "core/creation_internal.hpp"
#include "cublas_compute.hpp"
#include "ops/linalg_ops.hpp"
#include "tapeflow/ops/shape.hpp"

namespace tapeflow::cuda {
namespace {

/** How cuBLAS (column-major) should read a row-major matrix operand. */
struct Operand {
  Tensor t;
  cublasOperation_t op;
  int64_t ld;
  int64_t batch_stride;
};

Operand operand(const Tensor& input, const Shape& batch) {
  const int64_t r = input.rank();
  const int64_t rows = input.shape()[r - 2], cols = input.shape()[r - 1];
  Tensor t = input;
  const auto s = [&](int64_t i) { return t.strides()[t.rank() + i]; };
  const bool row_major = s(-1) == 1 && s(-2) >= std::max<int64_t>(cols, 1);
  const bool col_major = s(-2) == 1 && s(-1) >= std::max<int64_t>(rows, 1);
  // A contiguous tensor may carry any stride on a size-1 axis (a reshape or
  // broadcast view keeps it): canonical strides name the same elements.
  if (!row_major && !col_major)
    t = t.is_contiguous()
            ? make_view(t, t.shape(), contiguous_strides(t.shape()), t.offset())
            : materialize(t);
  // Batch axes must advance by one stride: none, or a dense run of them.
  bool single_batch = true;
  for (int64_t i = 0; i + 2 < t.rank(); ++i) single_batch &= t.shape()[i] == 1;
  int64_t batch_stride = 0;
  if (!single_batch) {
    Shape full = batch;
    full.push_back(rows);
    full.push_back(cols);
    t = materialize(broadcast_to(t, full));
    batch_stride = rows * cols;
  }
  const bool rm = t.strides()[t.rank() - 1] == 1 &&
                  t.strides()[t.rank() - 2] >= std::max<int64_t>(cols, 1);
  return {t, rm ? CUBLAS_OP_N : CUBLAS_OP_T,
          std::max<int64_t>(
              rm ? t.strides()[t.rank() - 2] : t.strides()[t.rank() - 1], 1),
          batch_stride};
}

void matmul(const MatMul&, Inputs in, const Outputs& outs) {
  Tensor& out = outs[0];
  if (out.numel() == 0) return;
  const int64_t r = out.rank();
  const int64_t M = out.shape()[r - 2], N = out.shape()[r - 1];
  const int64_t K = in[0].shape()[in[0].rank() - 1];
  Shape batch;
  for (int64_t i = 0; i + 2 < r; ++i) batch.push_back(out.shape()[i]);
  const Operand a = operand(in[0], batch), b = operand(in[1], batch);
  const int device = out.device().index;
  if (K == 0) {
    TAPEFLOW_CUDA_CHECK(cudaMemsetAsync(out.raw_data(), 0,
                                        out.numel() * itemsize(out.dtype()),
                                        activate(device)));
    return;
  }
  const cublasHandle_t handle = cublas(device);
  const int batches = static_cast<int>(batch.numel());
  const bool f64 = out.dtype() == float64;
  const cudaDataType type = f64 ? CUDA_R_64F : CUDA_R_32F;
  // The scale type follows the compute type: double for 64F, else float.
  const float one_f = 1.f, zero_f = 0.f;
  const double one_d = 1.0, zero_d = 0.0;
  const void* one = f64 ? static_cast<const void*>(&one_d) : &one_f;
  const void* zero = f64 ? static_cast<const void*>(&zero_d) : &zero_f;
  TAPEFLOW_CUDA_CHECK(cublasGemmStridedBatchedEx(
      handle, b.op, a.op, N, M, K, one, b.t.raw_data(), type, b.ld,
      b.batch_stride, a.t.raw_data(), type, a.ld, a.batch_stride, zero,
      out.raw_data(), type, N, M * N, batches, cublas_compute_type(out.dtype()),
      CUBLAS_GEMM_DEFAULT));
}

}  // namespace

void register_matmul(Registry& r) {
  r.set<MatMul>(DeviceType::cuda, matmul, "cublas");
}

}  // namespace tapeflow::cuda
