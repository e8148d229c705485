// Fused batch normalization: float32 through oneDNN's batch_normalization
// primitives on x seen as (N, C, S, 1) (primitives and memory objects cached
// per thread), other dtypes through the direct loops. The forward always
// normalizes with given statistics (use_global_stats): in training they are
// the batch moments the public function computed.
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
  memory src, dst, mean, var, scale_shift, diff_dst, diff_src, diff_ss;
};

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

/** Cached forward (backward = false) or backward primitive for x's shape. */
Prims& prims(const Tensor& x, double eps, bool backward, bool training) {
  const int64_t n = x.shape()[0], c = x.shape()[1],
                s = n * c ? x.numel() / (n * c) : 0;
  const int t = config::intra_op_threads();
  if (omp_get_max_threads() != t) omp_set_num_threads(t);
  std::vector<int64_t> key{n,        c,        s, std::bit_cast<int64_t>(eps),
                           backward, training, t};
  thread_local std::unordered_map<std::vector<int64_t>, Prims, VecHash> cache;
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;

  // As (N, C, S, 1): oneDNN 2.6 runs plain nchw with its ncsp_bnorm
  // kernel, ncw only with bnorm_ref (~100 ms against ~25 ms forward at
  // 32x64x3136, 2 threads). Both are slower than a jit nhwc/blocked kernel.
  const memory::desc data({n, c, s, 1}, memory::data_type::f32,
                          memory::format_tag::nchw);
  const memory::desc stat({c}, memory::data_type::f32, memory::format_tag::a);
  const memory::desc ss({2, c}, memory::data_type::f32, memory::format_tag::ab);
  const auto e = static_cast<float>(eps);
  Prims p;
  p.src = memory(data, engine(), nullptr);
  p.mean = memory(stat, engine(), nullptr);
  p.var = memory(stat, engine(), nullptr);
  p.scale_shift = memory(ss, engine());
  if (!backward) {
    const auto flags = normalization_flags::use_global_stats |
                       normalization_flags::use_scale_shift;
    p.prim = dnnl::batch_normalization_forward(
        dnnl::batch_normalization_forward::primitive_desc(
            dnnl::batch_normalization_forward::desc(
                prop_kind::forward_inference, data, e, flags),
            engine()));
    p.dst = memory(data, engine(), nullptr);
  } else {
    // Without use_global_stats the backward differentiates through the
    // batch statistics, as training needs.
    const auto flags = training ? normalization_flags::use_scale_shift
                                : normalization_flags::use_scale_shift |
                                      normalization_flags::use_global_stats;
    const dnnl::batch_normalization_forward::primitive_desc hint(
        dnnl::batch_normalization_forward::desc(prop_kind::forward_training,
                                                data, e, flags),
        engine());
    p.prim = dnnl::batch_normalization_backward(
        dnnl::batch_normalization_backward::primitive_desc(
            dnnl::batch_normalization_backward::desc(prop_kind::backward, data,
                                                     data, e, flags),
            engine(), hint));
    p.diff_dst = memory(data, engine(), nullptr);
    p.diff_src = memory(data, engine(), nullptr);
    p.diff_ss = memory(ss, engine(), nullptr);
  }
  return cache.emplace(std::move(key), std::move(p)).first->second;
}

/** Writes scale (and offset, if given) as the rows of oneDNN's 2 x C. */
void fill_scale_shift(Prims& p, const Tensor& scale, const Tensor* offset) {
  float* ss = static_cast<float*>(p.scale_shift.get_data_handle());
  const int64_t c = scale.numel();
  std::memcpy(ss, dense(scale).raw_data(), c * sizeof(float));
  if (offset)
    std::memcpy(ss + c, dense(*offset).raw_data(), c * sizeof(float));
  else
    std::fill_n(ss + c, c, 0.f);
}

void batch_norm(const FusedBatchNorm& op, Inputs in, Tensor& out) {
  if (out.dtype() != float32) return batch_norm_direct(op, in, out);
  if (out.numel() == 0) return;
  const Tensor x = dense(in[0]), mean = dense(in[3]), var = dense(in[4]);
  Prims& p = prims(x, op.epsilon, false, op.training);
  fill_scale_shift(p, in[1], &in[2]);
  p.src.set_data_handle(x.raw_data());
  p.dst.set_data_handle(out.raw_data());
  p.mean.set_data_handle(mean.raw_data());
  p.var.set_data_handle(var.raw_data());
  p.prim.execute(stream(), {{DNNL_ARG_SRC, p.src},
                            {DNNL_ARG_DST, p.dst},
                            {DNNL_ARG_MEAN, p.mean},
                            {DNNL_ARG_VARIANCE, p.var},
                            {DNNL_ARG_SCALE_SHIFT, p.scale_shift}});
  stream().wait();
}

void batch_norm_grad(const BatchNormGrad& op, Inputs in, Tensor& out) {
  if (out.dtype() != float32 || in[0].numel() == 0)
    return batch_norm_grad_direct(op, in, out);
  const Tensor x = dense(in[0]), dy = dense(in[1]), mean = dense(in[3]),
               var = dense(in[4]);
  Prims& p = prims(x, op.epsilon, true, op.training);
  fill_scale_shift(p, in[2], nullptr);
  float* o = static_cast<float*>(out.raw_data());
  p.src.set_data_handle(x.raw_data());
  p.mean.set_data_handle(mean.raw_data());
  p.var.set_data_handle(var.raw_data());
  p.diff_dst.set_data_handle(dy.raw_data());
  p.diff_src.set_data_handle(o);
  p.diff_ss.set_data_handle(o + x.numel());  // dscale then doffset
  p.prim.execute(stream(), {{DNNL_ARG_SRC, p.src},
                            {DNNL_ARG_MEAN, p.mean},
                            {DNNL_ARG_VARIANCE, p.var},
                            {DNNL_ARG_DIFF_DST, p.diff_dst},
                            {DNNL_ARG_SCALE_SHIFT, p.scale_shift},
                            {DNNL_ARG_DIFF_SRC, p.diff_src},
                            {DNNL_ARG_DIFF_SCALE_SHIFT, p.diff_ss}});
  stream().wait();
}

}  // namespace

void register_norm(Registry& r) {
  r.set<FusedBatchNorm>(DeviceType::cpu, batch_norm, "onednn");
  r.set<BatchNormGrad>(DeviceType::cpu, batch_norm_grad, "onednn");
}

}  // namespace tapeflow::cpu
