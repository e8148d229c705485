// matrix_inverse and matrix_determinant on the GPU through cuBLAS's batched
// LU (getrfBatched, then getriBatched for the inverse). cuBLAS is
// column-major, so it factors each row-major matrix's transpose: inv(A^T)
// written column-major reads row-major as inv(A), and det(A^T) = det(A).
// A singular matrix makes the inverse throw the CPU's ValueError, which
// needs the LU's info words on the host (one sync; the determinant of a
// singular matrix is 0 and needs none).
#include <string>
#include <vector>

#include "check.hpp"
#include "context.hpp"
#include "core/creation_internal.hpp"
#include "core/dtype_dispatch.hpp"
#include "grid.cuh"
#include "ops/linalg_ops.hpp"

namespace tapeflow::cuda {
namespace {

template <class T>
__global__ void matrix_pointers(T* base, int64_t stride, int64_t count,
                                T** out) {
  for (int64_t k = grid_first(); k < count; k += grid_step())
    out[k] = base + k * stride;
}

/** det = product of U's diagonal, negated once per row the pivots swapped. */
template <class T>
__global__ void lu_determinant(const T* lu, const int* pivots, int64_t n,
                               int64_t count, T* det) {
  for (int64_t k = grid_first(); k < count; k += grid_step()) {
    const T* m = lu + k * n * n;
    const int* piv = pivots + k * n;
    T d = 1;
    for (int64_t i = 0; i < n; ++i) {
      d *= m[i * n + i];
      if (piv[i] != i + 1) d = -d;  // 1-based, as in LAPACK
    }
    det[k] = d;
  }
}

template <class T>
cublasStatus_t getrf(cublasHandle_t h, int n, T** a, int* piv, int* info,
                     int batch) {
  if constexpr (sizeof(T) == 4)
    return cublasSgetrfBatched(h, n, a, n, piv, info, batch);
  else
    return cublasDgetrfBatched(h, n, a, n, piv, info, batch);
}

template <class T>
cublasStatus_t getri(cublasHandle_t h, int n, T** a, const int* piv, T** c,
                     int* info, int batch) {
  if constexpr (sizeof(T) == 4)
    return cublasSgetriBatched(h, n, a, n, piv, c, n, info, batch);
  else
    return cublasDgetriBatched(h, n, a, n, piv, c, n, info, batch);
}

/** A batch of n x n matrices factored in place by getrfBatched. */
struct BatchedLu {
  int64_t n = 0, count = 1;
  Tensor lu, pointers, pivots, info;
};

/** Copies x's matrices and factors them; count 0 or n 0: nothing to do. */
template <class T>
BatchedLu factor(const Tensor& input, const char* op) {
  const Tensor x = materialize(input);
  BatchedLu f;
  f.n = x.shape()[x.rank() - 1];
  for (int64_t i = 0; i + 2 < x.rank(); ++i) f.count *= x.shape()[i];
  if (f.n == 0 || f.count == 0) return f;
  if (f.n > INT32_MAX || f.count > INT32_MAX)
    throw op_error<ValueError>(op, "expected fewer than 2^31 matrices of ",
                               "fewer than 2^31 rows, got shape ",
                               x.shape().str());
  const int device = x.device().index;
  const cudaStream_t stream = activate(device);
  f.lu = empty_tensor(x.shape(), x.dtype(), x.device(), op);
  TAPEFLOW_CUDA_CHECK(cudaMemcpyAsync(f.lu.raw_data(), x.raw_data(),
                                      x.numel() * sizeof(T),
                                      cudaMemcpyDeviceToDevice, stream));
  f.pointers = empty_tensor({f.count}, int64, x.device(), op);
  matrix_pointers<T><<<blocks_for(f.count), kBlockThreads, 0, stream>>>(
      f.lu.data<T>(), f.n * f.n, f.count,
      static_cast<T**>(f.pointers.raw_data()));
  TAPEFLOW_CUDA_CHECK(cudaGetLastError());
  f.pivots = empty_tensor({f.count * f.n}, int32, x.device(), op);
  f.info = empty_tensor({f.count}, int32, x.device(), op);
  TAPEFLOW_CUDA_CHECK(getrf<T>(
      cublas(device), int(f.n), static_cast<T**>(f.pointers.raw_data()),
      f.pivots.data<int32_t>(), f.info.data<int32_t>(), int(f.count)));
  return f;
}

void inverse(const MatrixInverse& op, Inputs in, const Outputs& outs) {
  Tensor& out = outs[0];
  dispatch_floating(in[0].dtype(), op.name, [&](auto tag) {
    using T = decltype(tag);
    const BatchedLu f = factor<T>(in[0], op.name);
    if (f.n == 0 || f.count == 0) return;  // a 0x0 inverse writes nothing
    const int device = out.device().index;
    const cudaStream_t stream = activate(device);
    // The CPU refuses a singular matrix before writing anything.
    std::vector<int32_t> info(static_cast<size_t>(f.count));
    TAPEFLOW_CUDA_CHECK(cudaMemcpyAsync(info.data(), f.info.raw_data(),
                                        info.size() * sizeof(int32_t),
                                        cudaMemcpyDeviceToHost, stream));
    TAPEFLOW_CUDA_CHECK(cudaStreamSynchronize(stream));
    for (size_t k = 0; k < info.size(); ++k)
      if (info[k] > 0)
        throw ValueError(
            "[matrix_inverse] expected invertible matrices, got a "
            "singular one at batch index " +
            std::to_string(k));
    const Tensor targets =
        empty_tensor({f.count}, int64, out.device(), op.name);
    matrix_pointers<T><<<blocks_for(f.count), kBlockThreads, 0, stream>>>(
        out.data<T>(), f.n * f.n, f.count,
        static_cast<T**>(targets.raw_data()));
    TAPEFLOW_CUDA_CHECK(cudaGetLastError());
    TAPEFLOW_CUDA_CHECK(getri<T>(
        cublas(device), int(f.n), static_cast<T**>(f.pointers.raw_data()),
        f.pivots.data<int32_t>(), static_cast<T**>(targets.raw_data()),
        f.info.data<int32_t>(), int(f.count)));
  });
}

void determinant(const MatrixDeterminant& op, Inputs in, const Outputs& outs) {
  Tensor& out = outs[0];
  dispatch_floating(in[0].dtype(), op.name, [&](auto tag) {
    using T = decltype(tag);
    const BatchedLu f = factor<T>(in[0], op.name);
    if (f.count == 0) return;
    const int device = out.device().index;
    // n = 0: no factors, and each determinant is the empty product 1.
    const bool empty = f.n == 0;
    lu_determinant<T>
        <<<blocks_for(f.count), kBlockThreads, 0, activate(device)>>>(
            empty ? nullptr : f.lu.data<T>(),
            empty ? nullptr : f.pivots.data<int32_t>(), f.n, f.count,
            out.data<T>());
    TAPEFLOW_CUDA_CHECK(cudaGetLastError());
  });
}

}  // namespace

void register_linalg(Registry& r) {
  r.set<MatrixInverse>(DeviceType::cuda, inverse, "cublas");
  r.set<MatrixDeterminant>(DeviceType::cuda, determinant, "cublas");
}

}  // namespace tapeflow::cuda
