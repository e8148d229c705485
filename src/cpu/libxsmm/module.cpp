// libtapeflow_xsmm.so: the small matrix products through LIBXSMM, a module of
// its own that libtapeflow loads on the first matmul (small_matmul.cpp).
// LIBXSMM multiplies column-major matrices, X (m x k) times Y (k x n), and
// vectorizes along m. A row-major C = A B is the column-major C^T = B^T A^T
// over the same bytes: m = N, and C is written in place. Below 16 columns
// that m leaves the vector registers part empty (Zen 3: 32 x 10 x 64 takes
// 2.5 us, 32 x 4 x 64 0.86), so there the product is the column-major C = A B
// itself (m = M: 0.7 and 0.4 us, transposes included), into a buffer that is
// then transposed into C. The JIT kernels transpose Y but not X: an X that
// lies the other way is transposed into a buffer first. Every transpose runs
// through a JIT transpose kernel kept with the product's (libxsmm_otrans
// finds its kernel again on every call: 0.2 us of a 4 x 64 transpose's 0.23).
#include <libxsmm.h>
#include <libxsmm_generator.h>

#include <climits>
#include <cstdlib>
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
 * LIBXSMM keeps the code of every kernel it generates (8 KiB each, products
 * and transposes alike) for the life of the process: past this many kernels
 * of an element type (up to three a key: the product and its two transposes)
 * new shapes go to oneDNN, so that a stream of ever-new shapes (sequence
 * lengths, slices) costs at most ~32 MiB.
 */
constexpr int kMaxKernels = 4096;

template <class T>
using Kernel = std::conditional_t<std::is_same_v<T, float>, libxsmm_smmfunction,
                                  libxsmm_dmmfunction>;

struct KernelKey {
  libxsmm_blasint m, n, k, lda, ldb;
  int flags;
  bool copy_x;      // X is transposed into a buffer first
  bool by_columns;  // the product is C (m = M), not C^T (m = N)
  bool operator==(const KernelKey&) const = default;
};
struct KernelKeyHash {
  size_t operator()(const KernelKey& key) const {
    size_t h = 0;
    for (int64_t v : {int64_t{key.m}, int64_t{key.n}, int64_t{key.k},
                      int64_t{key.lda}, int64_t{key.ldb}, int64_t{key.flags},
                      int64_t{key.copy_x}, int64_t{key.by_columns}})
      h = h * 0x9e3779b97f4a7c15ull + std::hash<int64_t>()(v);
    return h;
  }
};

/**
 * A product's kernel (ldc = m, alpha 1, beta 0) and its transposes: of X's
 * k x m column-major bytes into X, and of the m x n column-major product into
 * C's n x m; each null where not needed or where LIBXSMM generates none
 * (libxsmm_otrans then).
 */
template <class T>
struct Kernels {
  Kernel<T> product = nullptr;
  libxsmm_xtransfunction transpose_x = nullptr;
  libxsmm_xtransfunction transpose_c = nullptr;
};

libxsmm_xtransfunction transpose_kernel(unsigned int type_size,
                                        unsigned int rows, unsigned int cols,
                                        unsigned int ldo) {
  libxsmm_descriptor_blob blob;
  return libxsmm_dispatch_trans(
      libxsmm_trans_descriptor_init(&blob, type_size, rows, cols, ldo));
}

/** The kernels for `key`; a null product past the cap. */
template <class T>
Kernels<T> kernels_for(const KernelKey& key) {
  // One table for all threads, under a lock: the kernels are shared, and
  // the lookup is ~1% of the smallest product's time.
  static std::mutex mutex;
  static std::unordered_map<KernelKey, Kernels<T>, KernelKeyHash> known;
  static int generated = 0;
  const std::lock_guard lock(mutex);
  if (const auto it = known.find(key); it != known.end()) return it->second;
  Kernels<T> kernels;
  const int needed = 1 + key.copy_x + key.by_columns;
  if (generated + needed <= kMaxKernels) {
    generated += needed;
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
    if (key.copy_x)
      kernels.transpose_x = transpose_kernel(sizeof(T), key.k, key.m, key.m);
    if (key.by_columns)
      kernels.transpose_c = transpose_kernel(sizeof(T), key.m, key.n, key.n);
    known.emplace(key, kernels);
  }
  return kernels;
}

/**
 * Writes the transpose of the rows x cols column-major matrix at `in` (leading
 * dimension ldi) to `out` (ldo), through `kernel` when there is one.
 */
template <class T>
void transpose(libxsmm_xtransfunction kernel, const T* in, int64_t ldi, T* out,
               int64_t ldo, int64_t rows, int64_t cols) {
  if (kernel) {
    const unsigned int ldi_u = ldi, ldo_u = ldo;
    kernel(in, &ldi_u, out, &ldo_u);
  } else {
    libxsmm_otrans(out, in, sizeof(T), rows, cols, ldi, ldo);
  }
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
  if (!fits_blasint(la.ld) || !fits_blasint(lb.ld)) return false;
  const bool by_columns = N < 16 && M >= 8;
  // C = A B: X = A, Y = B; C^T = B^T A^T: X = B^T, Y = A^T. X's bytes read
  // column-major are X itself when A is column-major (B row-major), else X's
  // transpose; Y's are Y or, through the kernel's flag, its transpose.
  const Tensor& x = by_columns ? a : b;
  const Tensor& y = by_columns ? b : a;
  const MatrixLayout lx = by_columns ? la : lb, ly = by_columns ? lb : la;
  const bool copy_x = lx.column_major != by_columns;
  const bool transposed_y = ly.column_major != by_columns;
  const int64_t m = by_columns ? M : N, n = by_columns ? N : M;
  const Kernels<T> kernels = kernels_for<T>(
      {libxsmm_blasint(m), libxsmm_blasint(n), libxsmm_blasint(K),
       libxsmm_blasint(copy_x ? m : lx.ld), libxsmm_blasint(ly.ld),
       transposed_y ? LIBXSMM_GEMM_FLAG_TRANS_B : 0, copy_x, by_columns});
  if (!kernels.product) return false;
  Shape batch;
  for (int64_t i = 0; i + 2 < r; ++i) batch.push_back(out.shape()[i]);
  const T* px = static_cast<const T*>(x.raw_data());
  const T* py = static_cast<const T*>(y.raw_data());
  T* pc = static_cast<T*>(out.raw_data());
  const int64_t grain = std::max<int64_t>(1, kParallelMacs / (M * N * K));
  // One buffer per thread for X's copy and the product C, from the CPU
  // allocator's cache. Rows are taken by thread number in parallel_for's own
  // team; on the caller (a serial run, maybe inside the user's own OpenMP
  // region) row 0. The thread count may have grown since it was read here:
  // a thread past the rows has a buffer of its own.
  const int64_t x_size = copy_x ? m * K : 0, c_size = by_columns ? M * N : 0;
  const int64_t buffer = x_size + c_size;
  const int64_t rows = buffer ? config::intra_op_threads() : 0;
  const Tensor scratch = buffer ? empty_tensor(Shape{rows, buffer}, out.dtype(),
                                               Device::cpu(), "matmul")
                                : Tensor();
  const int level = omp_get_level();
  parallel_for(batch.numel(), grain, [&](int64_t begin, int64_t end) {
    T* own_buffer = nullptr;
    std::vector<T> own;
    if (buffer) {
      const int64_t row = omp_get_level() > level ? omp_get_thread_num() : 0;
      if (row < rows) {
        own_buffer = static_cast<T*>(scratch.raw_data()) + row * buffer;
      } else {
        own.resize(buffer);
        own_buffer = own.data();
      }
    }
    for (int64_t s = begin; s < end; ++s) {
      const T* xs = px + batch_offset(x, batch, s);
      if (copy_x) {
        transpose(kernels.transpose_x, xs, lx.ld, own_buffer, m, K, m);
        xs = own_buffer;
      }
      T* cs = pc + s * M * N;
      kernels.product(xs, py + batch_offset(y, batch, s),
                      by_columns ? own_buffer + x_size : cs);
      if (by_columns)
        transpose(kernels.transpose_c, own_buffer + x_size, M, cs, N, M, N);
    }
  });
  return true;
}

/**
 * Whether LIBXSMM set up its code registry. Its first dispatch allocates the
 * registry and, when that fails (address space nearly gone), dereferences
 * it anyway: a segfault on the first small product. So the module sets it up
 * once and, without it, leaves every product to oneDNN.
 */
bool registry_ready() {
  static const bool ready = [] {
    libxsmm_init();
    libxsmm_registry_info info;
    return libxsmm_get_registry_info(&info) == EXIT_SUCCESS;
  }();
  return ready;
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
  if (M > kMaxMnk || N > kMaxMnk || K > kMaxMnk || M * N * K > kMaxMnk ||
      !registry_ready())
    return false;
  const auto la = matrix_layout(a), lb = matrix_layout(b);
  if (!la || !lb) return false;
  if (out.dtype() == float32) return run<float>(a, b, out, *la, *lb);
  if (out.dtype() == float64) return run<double>(a, b, out, *la, *lb);
  return false;
}
