// Fused batch normalization. The forward (x * a + b per channel, with given
// statistics: in training the batch moments the public function computed)
// runs the direct loops of cpu/batch_norm_direct.cpp for every dtype: for
// float32 they beat oneDNN 2.6's ncsp_bnorm on plain NCHW (53 vs 70 ms for
// the whole 64x64x56x56 training forward, 2 threads). The float32 gradient
// runs oneDNN's jit backward on the blocked layout (primitives, buffers and
// reorders cached per thread), other dtypes the direct loops.
#include <omp.h>

#include <bit>
#include <cstring>
#include <dnnl.hpp>
#include <unordered_map>
#include <vector>

#include "core/creation_internal.hpp"
#include "cpu/nn_direct.hpp"
#include "tapeflow/config.hpp"

namespace tapeflow::cpu {
namespace {

using dnnl::memory;
using dnnl::normalization_flags;
using dnnl::prop_kind;

dnnl::engine& engine() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}
dnnl::stream& stream() {
  thread_local dnnl::stream s(engine());
  return s;
}

struct Prims {
  dnnl::primitive prim;
  // Plain (user) memories, blocked copies of x, dy and dx and the reorders
  // between them.
  memory src, mean, var, scale_shift, diff_dst, diff_src, diff_ss;
  memory src_b, diff_dst_b, diff_src_b;
  dnnl::reorder to_src_b, to_diff_dst_b, from_diff_src_b;
};

/** The blocked layout of the machine's vector width. */
memory::format_tag blocked_tag() {
  return dnnl::get_effective_cpu_isa() >= dnnl::cpu_isa::avx512_core
             ? memory::format_tag::nChw16c
             : memory::format_tag::nChw8c;
}

struct VecHash {
  size_t operator()(const std::vector<int64_t>& v) const {
    size_t h = 0;
    for (int64_t x : v) h = h * 1099511628211ull ^ std::hash<int64_t>()(x);
    return h;
  }
};

Tensor dense(const Tensor& t) {
  return t.is_contiguous() ? t : materialize(t);
}

/** Cached backward primitive for x's shape. */
Prims& prims(const Tensor& x, double eps, bool training) {
  const int64_t n = x.shape()[0], c = x.shape()[1],
                s = n * c ? x.numel() / (n * c) : 0;
  const int t = config::intra_op_threads();
  if (omp_get_max_threads() != t) omp_set_num_threads(t);
  std::vector<int64_t> key{n, c, s, std::bit_cast<int64_t>(eps), training, t};
  thread_local std::unordered_map<std::vector<int64_t>, Prims, VecHash> cache;
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;

  // As (N, C, S, 1) in nChw16c/nChw8c: on plain nchw oneDNN 2.6 runs its
  // ncsp_bnorm kernel, whose training backward is slow and scales badly
  // (ONEDNN_VERBOSE, 64x64x3136, 2 threads on a loaded machine: 767 ms,
  // against 15 ms for bnorm_jit on the blocked layout plus ~20 ms for the
  // three reorders).
  const memory::desc data({n, c, s, 1}, memory::data_type::f32,
                          memory::format_tag::nchw);
  const memory::desc blk({n, c, s, 1}, memory::data_type::f32, blocked_tag());
  const memory::desc stat({c}, memory::data_type::f32, memory::format_tag::a);
  const memory::desc ss({2, c}, memory::data_type::f32, memory::format_tag::ab);
  const auto e = static_cast<float>(eps);
  Prims p;
  p.src = memory(data, engine(), nullptr);
  p.mean = memory(stat, engine(), nullptr);
  p.var = memory(stat, engine(), nullptr);
  p.scale_shift = memory(ss, engine());
  // Without use_global_stats the backward differentiates through the
  // batch statistics, as training needs.
  const auto flags = training ? normalization_flags::use_scale_shift
                              : normalization_flags::use_scale_shift |
                                    normalization_flags::use_global_stats;
  const dnnl::batch_normalization_forward::primitive_desc hint(
      dnnl::batch_normalization_forward::desc(prop_kind::forward_training, blk,
                                              e, flags),
      engine());
  p.prim = dnnl::batch_normalization_backward(
      dnnl::batch_normalization_backward::primitive_desc(
          dnnl::batch_normalization_backward::desc(prop_kind::backward, blk,
                                                   blk, e, flags),
          engine(), hint));
  p.diff_dst = memory(data, engine(), nullptr);
  p.diff_src = memory(data, engine(), nullptr);
  p.diff_ss = memory(ss, engine(), nullptr);
  p.src_b = memory(blk, engine());
  p.diff_dst_b = memory(blk, engine());
  p.diff_src_b = memory(blk, engine());
  p.to_src_b = dnnl::reorder(p.src, p.src_b);
  p.to_diff_dst_b = dnnl::reorder(p.diff_dst, p.diff_dst_b);
  p.from_diff_src_b = dnnl::reorder(p.diff_src_b, p.diff_src);
  return cache.emplace(std::move(key), std::move(p)).first->second;
}

/** Writes scale as the first row of oneDNN's 2 x C (the offset row, 0, is
 * not read by the backward). */
void fill_scale(Prims& p, const Tensor& scale) {
  float* ss = static_cast<float*>(p.scale_shift.get_data_handle());
  const int64_t c = scale.numel();
  std::memcpy(ss, dense(scale).raw_data(), c * sizeof(float));
  std::fill_n(ss + c, c, 0.f);
}

void batch_norm_grad(const BatchNormGrad& op, Inputs in, Tensor& out) {
  if (out.dtype() != float32 || in[0].numel() == 0)
    return batch_norm_grad_direct(op, in, out);
  const Tensor x = dense(in[0]), dy = dense(in[1]), mean = dense(in[3]),
               var = dense(in[4]);
  Prims& p = prims(x, op.epsilon, op.training);
  fill_scale(p, in[2]);
  float* o = static_cast<float*>(out.raw_data());
  p.src.set_data_handle(x.raw_data());
  p.mean.set_data_handle(mean.raw_data());
  p.var.set_data_handle(var.raw_data());
  p.diff_dst.set_data_handle(dy.raw_data());
  p.diff_src.set_data_handle(o);
  p.diff_ss.set_data_handle(o + x.numel());  // dscale then doffset
  p.to_src_b.execute(stream(), p.src, p.src_b);
  p.to_diff_dst_b.execute(stream(), p.diff_dst, p.diff_dst_b);
  p.prim.execute(stream(), {{DNNL_ARG_SRC, p.src_b},
                            {DNNL_ARG_MEAN, p.mean},
                            {DNNL_ARG_VARIANCE, p.var},
                            {DNNL_ARG_DIFF_DST, p.diff_dst_b},
                            {DNNL_ARG_SCALE_SHIFT, p.scale_shift},
                            {DNNL_ARG_DIFF_SRC, p.diff_src_b},
                            {DNNL_ARG_DIFF_SCALE_SHIFT, p.diff_ss}});
  p.from_diff_src_b.execute(stream(), p.diff_src_b, p.diff_src);
  stream().wait();
}

}  // namespace

void register_norm(Registry& r) {
  r.set<FusedBatchNorm>(DeviceType::cpu, batch_norm_direct, "direct");
  r.set<BatchNormGrad>(DeviceType::cpu, batch_norm_grad, "onednn");
  r.set<BatchMoments>(DeviceType::cpu, batch_moments_direct, "xsimd");
}

}  // namespace tapeflow::cpu
