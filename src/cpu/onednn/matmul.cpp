// matmul: float32 through oneDNN (primitives cached by shapes and strides),
// float64 through BLAS dgemm (oneDNN has no f64 matmul on CPU).
#include <cblas.h>

#include <dnnl.hpp>
#include <map>
#include <mutex>
#include <vector>

#include "core/creation_internal.hpp"
#include "cpu/parallel.hpp"
#include "ops/linalg_ops.hpp"

namespace tapeflow::cpu {
namespace {

/** True if the last two axes are row- or column-major (any leading dim). */
bool plain_matrix(const Tensor& t) {
  const int64_t r = t.rank();
  const int64_t rows = t.shape()[r - 2], cols = t.shape()[r - 1];
  const int64_t s0 = t.strides()[r - 2], s1 = t.strides()[r - 1];
  return (s1 == 1 && s0 >= std::max<int64_t>(cols, 1)) ||
         (s0 == 1 && s1 >= std::max<int64_t>(rows, 1)) || rows == 1 || cols == 1;
}

Tensor plain(const Tensor& t) { return plain_matrix(t) ? t : materialize(t); }

/** Dims and strides of `t` padded to `rank` with broadcast (size-1) axes. */
std::pair<dnnl::memory::dims, dnnl::memory::dims> padded(const Tensor& t,
                                                         int64_t rank) {
  dnnl::memory::dims dims(rank, 1), strides(rank, 0);
  const int64_t lead = rank - t.rank();
  for (int64_t i = 0; i < t.rank(); ++i) {
    dims[lead + i] = t.shape()[i];
    strides[lead + i] = t.shape()[i] == 1 ? 0 : t.strides()[i];
  }
  // oneDNN wants a real stride even on size-1 axes: give each one the extent
  // of what lies inside it so that no two axes alias.
  for (int64_t i = rank - 1; i >= 0; --i) {
    if (dims[i] != 1) continue;
    int64_t span = 1;
    for (int64_t j = i + 1; j < rank; ++j)
      span = std::max(span, strides[j] * dims[j]);
    strides[i] = span;
  }
  return {dims, strides};
}

struct Cache {
  std::mutex mu;
  std::map<std::vector<int64_t>, dnnl::matmul> primitives;
};

dnnl::engine& engine() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}

void matmul_f32(const Tensor& a, const Tensor& b, Tensor& out) {
  const int64_t rank = out.rank();
  auto [ad, as] = padded(a, rank);
  auto [bd, bs] = padded(b, rank);
  auto [cd, cs] = padded(out, rank);
  using dt = dnnl::memory::data_type;
  const dnnl::memory::desc amd(ad, dt::f32, as), bmd(bd, dt::f32, bs),
      cmd(cd, dt::f32, cs);

  std::vector<int64_t> key;
  for (const auto* v : {&ad, &as, &bd, &bs, &cd, &cs})
    key.insert(key.end(), v->begin(), v->end());
  key.push_back(config::intra_op_threads());
  static Cache cache;
  dnnl::matmul prim;
  {
    std::lock_guard lock(cache.mu);
    auto it = cache.primitives.find(key);
    if (it == cache.primitives.end()) {
      dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(amd, bmd, cmd), engine());
      it = cache.primitives.emplace(key, dnnl::matmul(pd)).first;
    }
    prim = it->second;
  }
  dnnl::stream s(engine());
  dnnl::memory am(amd, engine(), a.raw_data()), bm(bmd, engine(), b.raw_data()),
      cm(cmd, engine(), out.raw_data());
  prim.execute(s, {{DNNL_ARG_SRC, am}, {DNNL_ARG_WEIGHTS, bm}, {DNNL_ARG_DST, cm}});
  s.wait();
}

/** Offset of batch index k of `t` within the broadcast batch shape of out. */
int64_t batch_offset(const Tensor& t, const Shape& out_batch, int64_t k) {
  int64_t off = 0;
  const int64_t lead = out_batch.size() - (t.rank() - 2);
  for (int64_t i = out_batch.size() - 1; i >= 0; --i) {
    const int64_t idx = k % out_batch[i];
    k /= out_batch[i];
    if (i >= lead && t.shape()[i - lead] != 1) off += idx * t.strides()[i - lead];
  }
  return off;
}

void matmul_f64(const Tensor& a, const Tensor& b, Tensor& out) {
  const int64_t r = out.rank();
  const int64_t M = out.shape()[r - 2], N = out.shape()[r - 1], K = a.shape()[a.rank() - 1];
  Shape batch;
  for (int64_t i = 0; i + 2 < r; ++i) batch.push_back(out.shape()[i]);
  const auto layout = [](const Tensor& t, int64_t cols) {
    const int64_t s0 = t.strides()[t.rank() - 2], s1 = t.strides()[t.rank() - 1];
    if (s1 == 1 && s0 >= std::max<int64_t>(cols, 1)) return std::pair{CblasNoTrans, s0};
    if (s0 == 1) return std::pair{CblasTrans, std::max<int64_t>(s1, 1)};
    return std::pair{CblasNoTrans, std::max<int64_t>(cols, 1)};  // a single row
  };
  const auto [ta, lda] = layout(a, K);
  const auto [tb, ldb] = layout(b, N);
  const double* pa = static_cast<const double*>(a.raw_data());
  const double* pb = static_cast<const double*>(b.raw_data());
  double* pc = static_cast<double*>(out.raw_data());
  for (int64_t k = 0; k < batch.numel(); ++k)
    cblas_dgemm(CblasRowMajor, ta, tb, M, N, K, 1.0, pa + batch_offset(a, batch, k),
                lda, pb + batch_offset(b, batch, k), ldb, 0.0, pc + k * M * N,
                std::max<int64_t>(N, 1));
}

void matmul(const MatMul&, Inputs in, Tensor& out) {
  if (out.numel() == 0) return;
  const Tensor a = plain(in[0]), b = plain(in[1]);
  if (a.shape()[a.rank() - 1] == 0) {
    std::fill_n(static_cast<char*>(out.raw_data()), out.numel() * itemsize(out.dtype()), 0);
    return;
  }
  if (out.dtype() == float32)
    matmul_f32(a, b, out);
  else
    matmul_f64(a, b, out);
}

}  // namespace

void register_matmul(Registry& r) {
  r.set<MatMul>(DeviceType::cpu, matmul, "onednn");
}

}  // namespace tapeflow::cpu
