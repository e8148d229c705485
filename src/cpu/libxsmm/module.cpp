// libtapeflow_xsmm.so: the small matrix products through LIBXSMM, a module of
// its own that libtapeflow loads on the first matmul (small_matmul.cpp).
// LIBXSMM multiplies column-major matrices; a row-major C = A B is the
// column-major C^T = B^T A^T over the same bytes, so B goes first. Its JIT
// kernels transpose the second operand but not the first: a column-major B
// is transposed into a buffer per thread first, by a JIT transpose kernel
// kept with the product's (libxsmm_otrans finds its kernel again on every
// call: 0.2 us of a 4 x 64 transpose's 0.23, 0.1 of a 64 x 64's 0.5).
#include <libxsmm.h>
#include <libxsmm_generator.h>

#include <climits>
#include <initializer_list>
#include <mutex>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "core/creation_internal.hpp"
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

/**
 * LIBXSMM keeps the code of every kernel it generates (~8 KiB each) for the
 * life of the process, one per (shapes, leading dimensions, flags): past
 * this many distinct kernels new shapes go to oneDNN, so that a stream of
 * ever-new shapes (sequence lengths, slices) costs at most ~32 MiB.
 */
constexpr int kMaxKernels = 4096;

template <class T>
using Kernel = std::conditional_t<std::is_same_v<T, float>, libxsmm_smmfunction,
                                  libxsmm_dmmfunction>;

struct KernelKey {
  libxsmm_blasint m, n, k, lda, ldb;
  int flags;
  bool column_major_b;  // B is transposed into a buffer first
  bool operator==(const KernelKey&) const = default;
};
struct KernelKeyHash {
  size_t operator()(const KernelKey& key) const {
    size_t h = 0;
    for (int64_t v :
         {int64_t{key.m}, int64_t{key.n}, int64_t{key.k}, int64_t{key.lda},
          int64_t{key.ldb}, int64_t{key.flags}, int64_t{key.column_major_b}})
      h = h * 0x9e3779b97f4a7c15ull + std::hash<int64_t>()(v);
    return h;
  }
};

/**
 * A product's kernel (ldc = m, alpha 1, beta 0) and, for a column-major B,
 * the kernel that transposes B's k x m column-major matrix into a row-major
 * one (null where LIBXSMM generates none: libxsmm_otrans then).
 */
template <class T>
struct Kernels {
  Kernel<T> product = nullptr;
  libxsmm_xtransfunction transpose_b = nullptr;
};

/** The kernels for `key`; a null product past the cap. */
template <class T>
Kernels<T> kernels_for(const KernelKey& key) {
  // One table for all threads, under a lock: the kernels are shared, and
  // the lookup is ~1% of the smallest product's time.
  static std::mutex mutex;
  static std::unordered_map<KernelKey, Kernels<T>, KernelKeyHash> known;
  const std::lock_guard lock(mutex);
  if (const auto it = known.find(key); it != known.end()) return it->second;
  Kernels<T> kernels;
  if (known.size() < size_t{kMaxKernels}) {
    const T alpha = 1, beta = 0;
    const int prefetch = LIBXSMM_PREFETCH_NONE;
    if constexpr (std::is_same_v<T, float>)
      kernels.product =
          libxsmm_smmdispatch(key.m, key.n, key.k, &key.lda, &key.ldb, &key.m,
                              &alpha, &beta, &key.flags, &prefetch);
    else
      kernels.product =
          libxsmm_dmmdispatch(key.m, key.n, key.k, &key.lda, &key.ldb, &key.m,
                              &alpha, &beta, &key.flags, &prefetch);
    if (key.column_major_b) {
      libxsmm_descriptor_blob blob;
      kernels.transpose_b = libxsmm_dispatch_trans(
          libxsmm_trans_descriptor_init(&blob, sizeof(T), key.k, key.m, key.m));
    }
    known.emplace(key, kernels);
  }
  return kernels;
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
  // C^T = B^T A^T, column-major: m = N, n = M, ldc = N.
  const Kernels<T> kernels = kernels_for<T>(
      {libxsmm_blasint(N), libxsmm_blasint(M), libxsmm_blasint(K),
       libxsmm_blasint(ldb_used), libxsmm_blasint(la.ld),
       la.column_major ? LIBXSMM_GEMM_FLAG_TRANS_B : 0, lb.column_major});
  if (!kernels.product) return false;
  Shape batch;
  for (int64_t i = 0; i + 2 < r; ++i) batch.push_back(out.shape()[i]);
  const T* pa = static_cast<const T*>(a.raw_data());
  const T* pb = static_cast<const T*>(b.raw_data());
  T* pc = static_cast<T*>(out.raw_data());
  const int64_t grain = std::max<int64_t>(1, kParallelMacs / (M * N * K));
  // One K x N buffer per thread for a column-major B, from the CPU
  // allocator's cache. Rows are taken by thread number in parallel_for's own
  // team; on the caller (a serial run, maybe inside the user's own OpenMP
  // region) row 0. The thread count may have grown since it was read here:
  // a thread past the rows transposes into a buffer of its own.
  const int64_t rows = lb.column_major ? config::intra_op_threads() : 0;
  const Tensor scratch = lb.column_major
                             ? empty_tensor(Shape{rows, K * N}, out.dtype(),
                                            Device::cpu(), "matmul")
                             : Tensor();
  const int level = omp_get_level();
  parallel_for(batch.numel(), grain, [&](int64_t begin, int64_t end) {
    T* transposed = nullptr;
    std::vector<T> own;
    if (lb.column_major) {
      const int64_t row = omp_get_level() > level ? omp_get_thread_num() : 0;
      if (row < rows) {
        transposed = static_cast<T*>(scratch.raw_data()) + row * K * N;
      } else {
        own.resize(K * N);
        transposed = own.data();
      }
    }
    for (int64_t s = begin; s < end; ++s) {
      const T* bs = pb + batch_offset(b, batch, s);
      if (lb.column_major) {
        if (kernels.transpose_b) {
          const unsigned int ldi = lb.ld, ldo = N;
          kernels.transpose_b(bs, &ldi, transposed, &ldo);
        } else {
          libxsmm_otrans(transposed, bs, sizeof(T), K, N, lb.ld, N);
        }
        bs = transposed;
      }
      kernels.product(bs, pa + batch_offset(a, batch, s), pc + s * M * N);
    }
  });
  return true;
}

}  // namespace
}  // namespace tapeflow::cpu

/**
 * The module's entry point: cpu::small_matmul's contract. Versioned: a
 * module from another build found on the search path must not be called
 * with this build's Tensor.
 */
extern "C" bool tapeflow_small_matmul_v1(const tapeflow::Tensor& a,
                                         const tapeflow::Tensor& b,
                                         tapeflow::Tensor& out) {
  using namespace tapeflow;
  using namespace tapeflow::cpu;
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
