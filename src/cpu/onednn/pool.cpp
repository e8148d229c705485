// Pooling: float32 through oneDNN (primitives and memory objects cached per
// thread by geometry), other dtypes through the direct loops. MaxPoolGrad
// recomputes the forward pass with a workspace instead of saving one: the
// tape then keeps only x, and the recompute costs one cheap forward.
#include <omp.h>

#include <dnnl.hpp>
#include <unordered_map>
#include <vector>

#include "core/creation_internal.hpp"
#include "cpu/nn_direct.hpp"
#include "tapeflow/config.hpp"

namespace tapeflow::cpu {
namespace {

using dnnl::algorithm;
using dnnl::memory;
using dnnl::prop_kind;

dnnl::engine& engine() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}

memory::desc plain_desc(const Shape& s) {
  memory::dims dims(s.begin(), s.end()), strides(s.size());
  int64_t st = 1;
  for (int64_t i = s.size() - 1; i >= 0; --i) strides[i] = st, st *= s[i];
  return memory::desc(dims, memory::data_type::f32, strides);
}

memory::dims dims_of(const Shape& s) {
  return memory::dims(s.begin(), s.end());
}

/** Forward (and for gradients, backward) primitives of one geometry. */
struct Prims {
  dnnl::primitive fwd, bwd;
  memory src, dst, ws, diff_dst, diff_src;
};

struct VecHash {
  size_t operator()(const std::vector<int64_t>& v) const {
    size_t h = 0;
    for (int64_t x : v) h = h * 1099511628211ull ^ std::hash<int64_t>()(x);
    return h;
  }
};

/**
 * The cached primitives for pooling `in_shape` with `w`. For backward, the
 * max-pool forward writes into memory it owns (dst and workspace).
 */
Prims& prims(algorithm alg, bool backward, const PoolWindow& w,
             const Shape& in_shape) {
  std::vector<int64_t> key{static_cast<int64_t>(alg), backward,
                           config::intra_op_threads()};
  for (const Shape* s : {&in_shape, &w.ksize, &w.strides, &w.pad_lo, &w.pad_hi})
    key.insert(key.end(), s->begin(), s->end());
  thread_local std::unordered_map<std::vector<int64_t>, Prims, VecHash> cache;
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;

  const memory::desc src = plain_desc(in_shape),
                     dst = plain_desc(w.output_shape(in_shape));
  const auto k = dims_of(w.ksize), st = dims_of(w.strides),
             lo = dims_of(w.pad_lo), hi = dims_of(w.pad_hi);
  const dnnl::pooling_forward::primitive_desc fpd(
      dnnl::pooling_forward::desc(
          backward ? prop_kind::forward_training : prop_kind::forward_inference,
          alg, src, dst, st, k, lo, hi),
      engine());
  Prims p;
  p.src = memory(src, engine(), nullptr);
  if (!backward) {
    p.fwd = dnnl::pooling_forward(fpd);
    p.dst = memory(dst, engine(), nullptr);
  } else {
    const dnnl::pooling_backward::primitive_desc bpd(
        dnnl::pooling_backward::desc(alg, src, dst, st, k, lo, hi), engine(),
        fpd);
    p.bwd = dnnl::pooling_backward(bpd);
    p.diff_dst = memory(dst, engine(), nullptr);
    p.diff_src = memory(src, engine(), nullptr);
    if (alg == algorithm::pooling_max) {
      p.fwd = dnnl::pooling_forward(fpd);
      p.dst = memory(dst, engine());
      p.ws = memory(fpd.workspace_desc(), engine());
    }
  }
  return cache.emplace(std::move(key), std::move(p)).first->second;
}

dnnl::stream& stream() {
  thread_local dnnl::stream s(engine());
  return s;
}

void sync_threads() {
  // oneDNN reads this thread's OpenMP setting (see matmul.cpp).
  const int t = config::intra_op_threads();
  if (omp_get_max_threads() != t) omp_set_num_threads(t);
}

algorithm avg_alg(bool count_include_pad) {
  return count_include_pad ? algorithm::pooling_avg_include_padding
                           : algorithm::pooling_avg_exclude_padding;
}

void pool_forward(algorithm alg, const PoolWindow& w, const Tensor& x_in,
                  Tensor& out) {
  const Tensor x = x_in.is_contiguous() ? x_in : materialize(x_in);
  sync_threads();
  Prims& p = prims(alg, false, w, x.shape());
  p.src.set_data_handle(x.raw_data());
  p.dst.set_data_handle(out.raw_data());
  p.fwd.execute(stream(), {{DNNL_ARG_SRC, p.src}, {DNNL_ARG_DST, p.dst}});
  stream().wait();
}

void max_pool(const MaxPool& op, Inputs in, Tensor& out) {
  if (out.numel() == 0) return;
  if (out.dtype() != float32) return max_pool_direct(op, in, out);
  pool_forward(algorithm::pooling_max, op.w, in[0], out);
}

void avg_pool(const AvgPool& op, Inputs in, Tensor& out) {
  if (out.numel() == 0) return;
  if (out.dtype() != float32) return avg_pool_direct(op, in, out);
  pool_forward(avg_alg(op.count_include_pad), op.w, in[0], out);
}

void max_pool_grad(const MaxPoolGrad& op, Inputs in, Tensor& out) {
  if (out.numel() == 0) return;
  if (out.dtype() != float32) return max_pool_grad_direct(op, in, out);
  const Tensor x = in[0].is_contiguous() ? in[0] : materialize(in[0]);
  const Tensor dy = in[1].is_contiguous() ? in[1] : materialize(in[1]);
  if (dy.numel() == 0) {
    std::fill_n(static_cast<float*>(out.raw_data()), out.numel(), 0.f);
    return;
  }
  sync_threads();
  Prims& p = prims(algorithm::pooling_max, true, op.w, x.shape());
  p.src.set_data_handle(x.raw_data());
  p.fwd.execute(stream(), {{DNNL_ARG_SRC, p.src},
                           {DNNL_ARG_DST, p.dst},
                           {DNNL_ARG_WORKSPACE, p.ws}});
  p.diff_dst.set_data_handle(dy.raw_data());
  p.diff_src.set_data_handle(out.raw_data());
  p.bwd.execute(stream(), {{DNNL_ARG_DIFF_DST, p.diff_dst},
                           {DNNL_ARG_DIFF_SRC, p.diff_src},
                           {DNNL_ARG_WORKSPACE, p.ws}});
  stream().wait();
}

void avg_pool_grad(const AvgPoolGrad& op, Inputs in, Tensor& out) {
  if (out.numel() == 0) return;
  if (out.dtype() != float32) return avg_pool_grad_direct(op, in, out);
  const Tensor dy = in[0].is_contiguous() ? in[0] : materialize(in[0]);
  if (dy.numel() == 0) {
    std::fill_n(static_cast<float*>(out.raw_data()), out.numel(), 0.f);
    return;
  }
  sync_threads();
  Prims& p = prims(avg_alg(op.count_include_pad), true, op.w, op.input_shape);
  p.diff_dst.set_data_handle(dy.raw_data());
  p.diff_src.set_data_handle(out.raw_data());
  p.bwd.execute(stream(), {{DNNL_ARG_DIFF_DST, p.diff_dst},
                           {DNNL_ARG_DIFF_SRC, p.diff_src}});
  stream().wait();
}

}  // namespace

void register_pool(Registry& r) {
  constexpr DeviceType cpu = DeviceType::cpu;
  r.set<MaxPool>(cpu, max_pool, "onednn");
  r.set<AvgPool>(cpu, avg_pool, "onednn");
  r.set<MaxPoolGrad>(cpu, max_pool_grad, "onednn");
  r.set<AvgPoolGrad>(cpu, avg_pool_grad, "onednn");
  r.set<MaxPoolArgmax>(cpu, max_pool_argmax_direct, "direct");
}

}  // namespace tapeflow::cpu
