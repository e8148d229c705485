// The cuBLAS routines the CUDA backend calls, computed on the host for the
// CUDA emulator (tools/cuda_emu), whose device memory is host memory: the
// GEMMs in their compute type (float accumulation for the 32F types, with
// the inputs rounded to TF32 or bfloat16 where the type says FAST_TF32 or
// FAST_16BF, as cuBLAS does), and the batched LU factorization and
// inversion with cuBLAS's pivot and info conventions. Reference loops: the
// emulator checks what the backend asks of cuBLAS, not cuBLAS's speed.
#include <cublas_v2.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

namespace {

struct Handle {};

// Round to nearest even, keeping `bits` of float's 23 mantissa bits.
float keep_mantissa(float x, int bits) {
  if (!std::isfinite(x)) return x;
  uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  const int drop = 23 - bits;
  const uint32_t half = (1u << (drop - 1)) - 1 + ((u >> drop) & 1u);
  u = (u + half) & ~((1u << drop) - 1);
  std::memcpy(&x, &u, sizeof u);
  return x;
}

template <class T>
T compute_input(T x, cublasComputeType_t compute) {
  if constexpr (sizeof(T) == 4) {
    if (compute == CUBLAS_COMPUTE_32F_FAST_TF32) return keep_mantissa(x, 10);
    if (compute == CUBLAS_COMPUTE_32F_FAST_16BF) return keep_mantissa(x, 7);
  }
  return x;
}

// C = alpha op(A) op(B) + beta C, column-major, as cublasGemmEx: each
// entry summed over k in order, the loops arranged so that A is read along
// its columns where it is not transposed.
template <class T>
void gemm(cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
          T alpha, const T* a, int lda, const T* b, int ldb, T beta, T* c,
          int ldc, cublasComputeType_t compute) {
  auto at = [&](int i, int p) {
    return compute_input(
        ta == CUBLAS_OP_N ? a[i + int64_t(p) * lda] : a[p + int64_t(i) * lda],
        compute);
  };
  auto bt = [&](int p, int j) {
    return compute_input(
        tb == CUBLAS_OP_N ? b[p + int64_t(j) * ldb] : b[j + int64_t(p) * ldb],
        compute);
  };
  std::vector<T> sums(m);
  for (int j = 0; j < n; ++j) {
    std::fill(sums.begin(), sums.end(), T(0));
    // BLAS reads neither A nor B where alpha is 0.
    if (alpha != T(0)) {
      if (ta == CUBLAS_OP_N) {
        for (int p = 0; p < k; ++p) {
          const T bpj = bt(p, j);
          for (int i = 0; i < m; ++i) sums[i] += at(i, p) * bpj;
        }
      } else {
        for (int i = 0; i < m; ++i)
          for (int p = 0; p < k; ++p) sums[i] += at(i, p) * bt(p, j);
      }
    }
    for (int i = 0; i < m; ++i) {
      T& out = c[i + int64_t(j) * ldc];
      // beta 0 ignores C's old contents, NaN included, as BLAS does.
      out = beta == T(0) ? alpha * sums[i] : alpha * sums[i] + beta * out;
    }
  }
}

// cuBLAS's argument checks: a leading dimension below its operand's rows.
bool valid_shape(cublasOperation_t ta, cublasOperation_t tb, int m, int n,
                 int k, int lda, int ldb, int ldc) {
  const int a_rows = ta == CUBLAS_OP_N ? m : k;
  const int b_rows = tb == CUBLAS_OP_N ? k : n;
  return m >= 0 && n >= 0 && k >= 0 && lda >= std::max(1, a_rows) &&
         ldb >= std::max(1, b_rows) && ldc >= std::max(1, m);
}

bool supported(cudaDataType a, cudaDataType b, cudaDataType c,
               cublasComputeType_t compute) {
  if (a != b || a != c) return false;
  if (a == CUDA_R_64F) return compute == CUBLAS_COMPUTE_64F;
  return a == CUDA_R_32F && (compute == CUBLAS_COMPUTE_32F ||
                             compute == CUBLAS_COMPUTE_32F_FAST_TF32 ||
                             compute == CUBLAS_COMPUTE_32F_FAST_16BF);
}

// LU of the column-major n x n matrix a, with partial pivoting where there
// are pivots to write (1-based rows), without where there are none; info is
// the 1-based index of the first zero pivot (0: none).
template <class T>
void getrf(int n, T* a, int lda, int* pivots, int* info) {
  *info = 0;
  for (int j = 0; j < n; ++j) {
    int p = j;
    for (int i = j + 1; i < n && pivots; ++i)
      if (std::abs(a[i + int64_t(j) * lda]) > std::abs(a[p + int64_t(j) * lda]))
        p = i;
    if (pivots) pivots[j] = p + 1;
    if (p != j)
      for (int q = 0; q < n; ++q)
        std::swap(a[j + int64_t(q) * lda], a[p + int64_t(q) * lda]);
    const T pivot = a[j + int64_t(j) * lda];
    if (pivot == T(0)) {
      if (*info == 0) *info = j + 1;
      continue;
    }
    for (int i = j + 1; i < n; ++i) {
      T& l = a[i + int64_t(j) * lda];
      l /= pivot;
      for (int q = j + 1; q < n; ++q)
        a[i + int64_t(q) * lda] -= l * a[j + int64_t(q) * lda];
    }
  }
}

// inverse(A) from getrf's P A = L U, column by column of the identity.
template <class T>
void getri(int n, const T* lu, int lda, const int* pivots, T* c, int ldc,
           int* info) {
  *info = 0;
  for (int j = 0; j < n; ++j)
    if (lu[j + int64_t(j) * lda] == T(0)) {
      *info = j + 1;
      return;
    }
  std::vector<T> x(n);
  for (int col = 0; col < n; ++col) {
    for (int i = 0; i < n; ++i) x[i] = T(i == col);
    for (int i = 0; i < n; ++i)
      if (pivots && pivots[i] - 1 != i) std::swap(x[i], x[pivots[i] - 1]);
    for (int i = 0; i < n; ++i)
      for (int q = 0; q < i; ++q) x[i] -= lu[i + int64_t(q) * lda] * x[q];
    for (int i = n - 1; i >= 0; --i) {
      for (int q = i + 1; q < n; ++q) x[i] -= lu[i + int64_t(q) * lda] * x[q];
      x[i] /= lu[i + int64_t(i) * lda];
    }
    for (int i = 0; i < n; ++i) c[i + int64_t(col) * ldc] = x[i];
  }
}

}  // namespace

extern "C" {

cublasStatus_t cublasCreate_v2(cublasHandle_t* handle) {
  *handle = reinterpret_cast<cublasHandle_t>(new Handle);
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasDestroy_v2(cublasHandle_t handle) {
  delete reinterpret_cast<Handle*>(handle);
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasSetStream_v2(cublasHandle_t, cudaStream_t) {
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasSetWorkspace_v2(cublasHandle_t, void*, size_t) {
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGemmStridedBatchedEx(
    cublasHandle_t, cublasOperation_t ta, cublasOperation_t tb, int m, int n,
    int k, const void* alpha, const void* a, cudaDataType a_type, int lda,
    long long stride_a, const void* b, cudaDataType b_type, int ldb,
    long long stride_b, const void* beta, void* c, cudaDataType c_type, int ldc,
    long long stride_c, int batches, cublasComputeType_t compute,
    cublasGemmAlgo_t) {
  if (!supported(a_type, b_type, c_type, compute))
    return CUBLAS_STATUS_NOT_SUPPORTED;
  if (!valid_shape(ta, tb, m, n, k, lda, ldb, ldc) || batches < 0)
    return CUBLAS_STATUS_INVALID_VALUE;
  for (int i = 0; i < batches; ++i) {
    if (a_type == CUDA_R_64F)
      gemm(ta, tb, m, n, k, *static_cast<const double*>(alpha),
           static_cast<const double*>(a) + i * stride_a, lda,
           static_cast<const double*>(b) + i * stride_b, ldb,
           *static_cast<const double*>(beta),
           static_cast<double*>(c) + i * stride_c, ldc, compute);
    else
      gemm(ta, tb, m, n, k, *static_cast<const float*>(alpha),
           static_cast<const float*>(a) + i * stride_a, lda,
           static_cast<const float*>(b) + i * stride_b, ldb,
           *static_cast<const float*>(beta),
           static_cast<float*>(c) + i * stride_c, ldc, compute);
  }
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGemmEx(cublasHandle_t handle, cublasOperation_t ta,
                            cublasOperation_t tb, int m, int n, int k,
                            const void* alpha, const void* a,
                            cudaDataType a_type, int lda, const void* b,
                            cudaDataType b_type, int ldb, const void* beta,
                            void* c, cudaDataType c_type, int ldc,
                            cublasComputeType_t compute,
                            cublasGemmAlgo_t algo) {
  return cublasGemmStridedBatchedEx(handle, ta, tb, m, n, k, alpha, a, a_type,
                                    lda, 0, b, b_type, ldb, 0, beta, c, c_type,
                                    ldc, 0, 1, compute, algo);
}

#define TAPEFLOW_CUBLAS_EMU_LU(prefix, T)                                    \
  cublasStatus_t cublas##prefix##getrfBatched(                               \
      cublasHandle_t, int n, T* const a[], int lda, int* pivots, int* info,  \
      int batches) {                                                         \
    for (int i = 0; i < batches; ++i)                                        \
      getrf(n, a[i], lda, pivots ? pivots + int64_t(i) * n : nullptr,        \
            info + i);                                                       \
    return CUBLAS_STATUS_SUCCESS;                                            \
  }                                                                          \
  cublasStatus_t cublas##prefix##getriBatched(                               \
      cublasHandle_t, int n, const T* const a[], int lda, const int* pivots, \
      T* const c[], int ldc, int* info, int batches) {                       \
    for (int i = 0; i < batches; ++i)                                        \
      getri(n, a[i], lda, pivots ? pivots + int64_t(i) * n : nullptr, c[i],  \
            ldc, info + i);                                                  \
    return CUBLAS_STATUS_SUCCESS;                                            \
  }
TAPEFLOW_CUBLAS_EMU_LU(S, float)
TAPEFLOW_CUBLAS_EMU_LU(D, double)

}  // extern "C"
