// Pooling: float32 through oneDNN (primitives and memory objects cached per
// thread by geometry), other dtypes through the direct loops; float32 max
// pooling 2x2/2 without padding (forward, gradient scatter and its gather)
// through the xsimd kernels of max_pool_2x2.cpp, which beat oneDNN's
// plain-layout ones severalfold. oneDNN's max-pool workspace (u8 or s32
// window indices) is widened into MaxPool's int32 one; the max-pool gradient
// scatters through it (direct loops: oneDNN's plain-layout backward is
// slower than a scatter). oneDNN's max pooling keeps a NaN only in some
// window positions, so an input holding NaN max-pools through the direct
// loops, which give the first NaN of each window (docs/architecture.md), as
// does a geometry past int32, which oneDNN may refuse.
#include <atomic>
#include <dnnl.hpp>
#include <limits>
#include <unordered_map>
#include <vector>

#include "core/creation_internal.hpp"
#include "cpu/nn_direct.hpp"
#include "cpu/onednn/common.hpp"
#include "cpu/parallel.hpp"
#include "cpu/xsimd_config.hpp"
#include "tapeflow/config.hpp"

namespace tapeflow::cpu {
namespace {

using dnnl::algorithm;
using dnnl::memory;
using dnnl::prop_kind;
using onednn::engine;
using onednn::stream;
using onednn::sync_threads;

memory::desc plain_desc(const Shape& s) {
  memory::dims dims(s.begin(), s.end()), strides(s.size());
  int64_t st = 1;
  for (int64_t i = s.size() - 1; i >= 0; --i) strides[i] = st, st *= s[i];
  return memory::desc(dims, memory::data_type::f32, strides);
}

memory::dims dims_of(const Shape& s) {
  return memory::dims(s.begin(), s.end());
}

/** What a cached entry computes. */
enum class Pass { inference, training, backward };

/** The primitive of one geometry and pass, and its memory objects. */
struct Prims {
  dnnl::primitive prim;
  memory src, dst, ws, diff_dst, diff_src;
};

/**
 * The cached primitive for pooling `in_shape` with `w`. The training forward
 * (max only) writes its workspace into memory the entry owns.
 */
Prims& prims(algorithm alg, Pass pass, const PoolWindow& w,
             const Shape& in_shape) {
  // The thread count of the key is the one the primitive is made and run
  // with (see sync_threads).
  const int threads = onednn::call_threads();
  sync_threads(threads);
  std::vector<int64_t> key{static_cast<int64_t>(alg),
                           static_cast<int64_t>(pass), threads};
  for (const Shape* s : {&in_shape, &w.ksize, &w.strides, &w.pad_lo, &w.pad_hi})
    key.insert(key.end(), s->begin(), s->end());
  thread_local std::unordered_map<std::vector<int64_t>, Prims,
                                  onednn::Int64sHash>
      cache;
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;

  const memory::desc src = plain_desc(in_shape),
                     dst = plain_desc(w.output_shape(in_shape));
  const auto k = dims_of(w.ksize), st = dims_of(w.strides),
             lo = dims_of(w.pad_lo), hi = dims_of(w.pad_hi);
  const dnnl::pooling_forward::primitive_desc fpd(
      dnnl::pooling_forward::desc(pass == Pass::inference
                                      ? prop_kind::forward_inference
                                      : prop_kind::forward_training,
                                  alg, src, dst, st, k, lo, hi),
      engine());
  Prims p;
  if (pass != Pass::backward) {
    p.prim = dnnl::pooling_forward(fpd);
    p.src = memory(src, engine(), nullptr);
    p.dst = memory(dst, engine(), nullptr);
    if (pass == Pass::training) p.ws = memory(fpd.workspace_desc(), engine());
  } else {
    p.prim = dnnl::pooling_backward(dnnl::pooling_backward::primitive_desc(
        dnnl::pooling_backward::desc(alg, src, dst, st, k, lo, hi), engine(),
        fpd));
    p.diff_dst = memory(dst, engine(), nullptr);
    p.diff_src = memory(src, engine(), nullptr);
  }
  return cache.emplace(std::move(key), std::move(p)).first->second;
}

algorithm avg_alg(bool count_include_pad) {
  return count_include_pad ? algorithm::pooling_avg_include_padding
                           : algorithm::pooling_avg_exclude_padding;
}

void pool_forward(algorithm alg, const PoolWindow& w, const Tensor& x,
                  Tensor& out) {
  Prims& p = prims(alg, Pass::inference, w, x.shape());
  p.src.set_data_handle(x.raw_data());
  p.dst.set_data_handle(out.raw_data());
  p.prim.execute(stream(), {{DNNL_ARG_SRC, p.src}, {DNNL_ARG_DST, p.dst}});
  stream().wait();
}

/** Max pooling that also fills `ws` (see MaxPool) from oneDNN's workspace. */
void max_pool_training(const PoolWindow& w, const Tensor& x, Tensor& out,
                       Tensor& ws) {
  Prims& p = prims(algorithm::pooling_max, Pass::training, w, x.shape());
  p.src.set_data_handle(x.raw_data());
  p.dst.set_data_handle(out.raw_data());
  p.prim.execute(stream(), {{DNNL_ARG_SRC, p.src},
                            {DNNL_ARG_DST, p.dst},
                            {DNNL_ARG_WORKSPACE, p.ws}});
  stream().wait();
  int32_t* to = static_cast<int32_t*>(ws.raw_data());
  const void* from = p.ws.get_data_handle();
  if (p.ws.get_desc().data_type() == memory::data_type::s32)
    std::copy_n(static_cast<const int32_t*>(from), ws.numel(), to);
  else
    std::copy_n(static_cast<const uint8_t*>(from), ws.numel(), to);
}

/**
 * Whether oneDNN 2.6 takes `w` over an input of shape `in`: it refuses some
 * geometries past int32 (a count_include_pad window of 2^32 taps), which
 * the direct loops run. Sizes, window taps and padded extents are bounded,
 * in double so that the bound itself cannot overflow.
 */
bool onednn_takes(const PoolWindow& w, const Shape& in) {
  constexpr double most = std::numeric_limits<int32_t>::max();
  double taps = 1;
  for (int64_t i = 0; i < w.ksize.size(); ++i) {
    taps *= static_cast<double>(w.ksize[i]);
    const double padded = static_cast<double>(in[i + 2]) +
                          static_cast<double>(w.pad_lo[i]) +
                          static_cast<double>(w.pad_hi[i]);
    if (padded > most || static_cast<double>(w.strides[i]) > most) return false;
  }
  return taps <= most;
}

/**
 * Whether contiguous float32 `x` holds a NaN or -inf: one read, in batches.
 * oneDNN starts a max from the lowest finite float, so a window of -inf came
 * out as -FLT_MAX there and as -inf on the direct loops.
 */
bool has_nan_or_minus_inf(const Tensor& x) {
  using B = xsimd::batch<float>;
  const float* p = static_cast<const float*>(x.raw_data());
  std::atomic<bool> found{false};
  parallel_for(x.numel(), kParallelGrain, [&](int64_t begin, int64_t end) {
    const B minus_inf(-std::numeric_limits<float>::infinity());
    typename B::batch_bool_type special(false);
    int64_t i = begin;
    for (; i + int64_t(B::size) <= end; i += B::size) {
      const B v = B::load_unaligned(p + i);
      special = special | xsimd::isnan(v) | (v == minus_inf);
    }
    bool any = xsimd::any(special);
    for (; i < end; ++i)
      any |= p[i] != p[i] || p[i] == -std::numeric_limits<float>::infinity();
    if (any) found = true;
  });
  return found;
}

void max_pool(const MaxPool& op, Inputs in, const Outputs& outs) {
  Tensor& out = outs[0];
  if (out.dtype() != float32 || out.numel() == 0)
    return max_pool_direct(op, in, outs);
  const Tensor x = materialize(in[0]);
  Tensor* ws = op.with_workspace ? &outs[1] : nullptr;
  if (max_pool_2x2_applies(op.w, x.shape(), x.dtype()))
    return max_pool_2x2(static_cast<const float*>(x.raw_data()),
                        static_cast<float*>(out.raw_data()),
                        ws ? static_cast<int32_t*>(ws->raw_data()) : nullptr,
                        x.shape());
  if (!onednn_takes(op.w, x.shape()) || has_nan_or_minus_inf(x))
    return max_pool_direct(op, in, outs);
  if (ws) return max_pool_training(op.w, x, out, *ws);
  pool_forward(algorithm::pooling_max, op.w, x, out);
}

void max_pool_argmax(const MaxPoolArgmax& op, Inputs in, const Outputs& outs) {
  // The 2x2 workspace holds the same window indices for every dtype.
  if (in[0].numel() == 0 ||
      !max_pool_2x2_applies(op.w, op.input_shape, float32))
    return max_pool_argmax_direct(op, in, outs);
  const Tensor ws = materialize(in[0]);
  max_pool_2x2_tf_argmax(static_cast<const int32_t*>(ws.raw_data()),
                         static_cast<int64_t*>(outs[0].raw_data()),
                         op.input_shape, op.include_batch_in_index);
}

void avg_pool(const AvgPool& op, Inputs in, const Outputs& outs) {
  Tensor& out = outs[0];
  if (out.numel() == 0) return;
  if (out.dtype() != float32 || !onednn_takes(op.w, in[0].shape()))
    return avg_pool_direct(op, in, outs);
  pool_forward(avg_alg(op.count_include_pad), op.w, materialize(in[0]), out);
}

void max_pool_scatter(const MaxPoolScatter& op, Inputs in,
                      const Outputs& outs) {
  Tensor& out = outs[0];
  if (out.dtype() == float32 && in[0].numel() > 0 &&
      max_pool_2x2_applies(op.w, op.input_shape, float32)) {
    const Tensor dy = materialize(in[0]), ws = materialize(in[1]);
    return max_pool_2x2_scatter(static_cast<const float*>(dy.raw_data()),
                                static_cast<const int32_t*>(ws.raw_data()),
                                static_cast<float*>(out.raw_data()),
                                op.input_shape);
  }
  max_pool_scatter_direct(op, in, outs);
}

void max_pool_gather(const MaxPoolGather& op, Inputs in, const Outputs& outs) {
  Tensor& out = outs[0];
  if (out.dtype() == float32 && out.numel() > 0 &&
      max_pool_2x2_applies(op.w, in[0].shape(), float32)) {
    const Tensor gx = materialize(in[0]), ws = materialize(in[1]);
    return max_pool_2x2_gather(static_cast<const float*>(gx.raw_data()),
                               static_cast<const int32_t*>(ws.raw_data()),
                               static_cast<float*>(out.raw_data()), gx.shape());
  }
  max_pool_gather_direct(op, in, outs);
}

void avg_pool_grad(const AvgPoolGrad& op, Inputs in, const Outputs& outs) {
  Tensor& out = outs[0];
  if (out.numel() == 0) return;
  if (out.dtype() != float32 || !onednn_takes(op.w, op.input_shape))
    return avg_pool_grad_direct(op, in, outs);
  const Tensor dy = materialize(in[0]);
  if (dy.numel() == 0) {
    std::fill_n(static_cast<float*>(out.raw_data()), out.numel(), 0.f);
    return;
  }
  Prims& p = prims(avg_alg(op.count_include_pad), Pass::backward, op.w,
                   op.input_shape);
  p.diff_dst.set_data_handle(dy.raw_data());
  p.diff_src.set_data_handle(out.raw_data());
  p.prim.execute(stream(), {{DNNL_ARG_DIFF_DST, p.diff_dst},
                            {DNNL_ARG_DIFF_SRC, p.diff_src}});
  stream().wait();
}

}  // namespace

void register_pool(Registry& r) {
  constexpr DeviceType cpu = DeviceType::cpu;
  r.set<MaxPool>(cpu, max_pool, "onednn");
  r.set<AvgPool>(cpu, avg_pool, "onednn");
  r.set<AvgPoolGrad>(cpu, avg_pool_grad, "onednn");
  r.set<MaxPoolScatter>(cpu, max_pool_scatter, "xsimd");
  r.set<MaxPoolGather>(cpu, max_pool_gather, "xsimd");
  r.set<MaxPoolArgmax>(cpu, max_pool_argmax, "direct");
}

}  // namespace tapeflow::cpu
