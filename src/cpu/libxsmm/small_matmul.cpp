// LIBXSMM multiplies column-major matrices; a row-major C = A B is the
// column-major C^T = B^T A^T over the same bytes, so B goes first. Its JIT
// kernels transpose the second operand but not the first: a column-major B
// is transposed into a per-thread buffer first (libxsmm_otrans).
#include "cpu/libxsmm/small_matmul.hpp"

#include <libxsmm.h>

#include <climits>
#include <vector>

#include "cpu/matrix_layout.hpp"
#include "cpu/parallel.hpp"

namespace tapeflow::cpu {
namespace {

/**
 * Largest m * n * k taken here: LIBXSMM's own bound for small products
 * (LIBXSMM_CONFIG_MAX_MNK, 64^3). On a Zen 3 core oneDNN takes ~1.5x
 * LIBXSMM's time up to 64^3, as long at 96^3, and 0.75x from 128^3 on.
 */
constexpr int64_t kMaxMnk = LIBXSMM_CONFIG_MAX_MNK;

template <class T>
auto dispatch(libxsmm_blasint m, libxsmm_blasint n, libxsmm_blasint k,
              libxsmm_blasint lda, libxsmm_blasint ldb, libxsmm_blasint ldc,
              int flags) {
  const T alpha = 1, beta = 0;
  const int prefetch = LIBXSMM_PREFETCH_NONE;
  if constexpr (std::is_same_v<T, float>)
    return libxsmm_smmdispatch(m, n, k, &lda, &ldb, &ldc, &alpha, &beta, &flags,
                               &prefetch);
  else
    return libxsmm_dmmdispatch(m, n, k, &lda, &ldb, &ldc, &alpha, &beta, &flags,
                               &prefetch);
}

bool fits_blasint(int64_t v) {
  return v <= INT_MAX;
}

template <class T>
bool run(const Tensor& a, const Tensor& b, Tensor& out, MatrixLayout la,
         MatrixLayout lb) {
  const int64_t r = out.rank();
  const int64_t M = out.shape()[r - 2], N = out.shape()[r - 1],
                K = a.shape()[a.rank() - 1];
  // A column-major B lands in the buffer as row-major K x N.
  const int64_t ldb_used = lb.column_major ? N : lb.ld;
  if (!fits_blasint(la.ld) || !fits_blasint(lb.ld)) return false;
  const auto kernel =
      dispatch<T>(N, M, K, ldb_used, la.ld, N,
                  la.column_major ? LIBXSMM_GEMM_FLAG_TRANS_B : 0);
  if (!kernel) return false;
  Shape batch;
  for (int64_t i = 0; i + 2 < r; ++i) batch.push_back(out.shape()[i]);
  const T* pa = static_cast<const T*>(a.raw_data());
  const T* pb = static_cast<const T*>(b.raw_data());
  T* pc = static_cast<T*>(out.raw_data());
  const int64_t grain = std::max<int64_t>(1, kParallelMacs / (M * N * K));
  parallel_for(batch.numel(), grain, [&](int64_t begin, int64_t end) {
    thread_local std::vector<T> transposed;  // grows only: no refill per call
    if (lb.column_major && transposed.size() < size_t(K * N))
      transposed.resize(K * N);
    for (int64_t s = begin; s < end; ++s) {
      const T* bs = pb + batch_offset(b, batch, s);
      if (lb.column_major) {
        libxsmm_otrans(transposed.data(), bs, sizeof(T), K, N, lb.ld, N);
        bs = transposed.data();
      }
      kernel(bs, pa + batch_offset(a, batch, s), pc + s * M * N);
    }
  });
  return true;
}

}  // namespace

bool small_matmul(const Tensor& a, const Tensor& b, Tensor& out) {
  const int64_t r = out.rank();
  const int64_t M = out.shape()[r - 2], N = out.shape()[r - 1],
                K = a.shape()[a.rank() - 1];
  // Each factor first, so that the product cannot overflow.
  if (M > kMaxMnk || N > kMaxMnk || K > kMaxMnk || M * N * K > kMaxMnk)
    return false;
  const auto la = matrix_layout(a), lb = matrix_layout(b);
  if (!la || !lb) return false;
  if (out.dtype() == float32) return run<float>(a, b, out, *la, *lb);
  if (out.dtype() == float64) return run<double>(a, b, out, *la, *lb);
  return false;
}

}  // namespace tapeflow::cpu
