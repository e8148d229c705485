// Convolutions: float32 through oneDNN's forward, backward-data and
// backward-weights primitives on plain layouts (cached per thread by shapes
// and attributes), float64 through the direct loops of cpu/conv_direct.cpp.
#include <omp.h>

#include <dnnl.hpp>
#include <unordered_map>
#include <vector>

#include "core/creation_internal.hpp"
#include "cpu/conv_direct.hpp"
#include "tapeflow/config.hpp"

namespace tapeflow::cpu {
namespace {

using dnnl::memory;
enum class Pass : int64_t { forward, grad_input, grad_filter };

dnnl::engine& engine() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}

memory::dims dims(const Shape& s) {
  return memory::dims(s.begin(), s.end());
}

/** Activations ncw/nchw/ncdhw; filters oi*, or goi* split by groups. */
memory::desc activation_md(const Shape& s) {
  static const memory::format_tag tags[] = {memory::format_tag::ncw,
                                            memory::format_tag::nchw,
                                            memory::format_tag::ncdhw};
  return memory::desc(dims(s), memory::data_type::f32, tags[s.size() - 3]);
}
memory::desc filter_md(const Shape& s, int64_t groups) {
  if (groups == 1) {
    static const memory::format_tag tags[] = {memory::format_tag::oiw,
                                              memory::format_tag::oihw,
                                              memory::format_tag::oidhw};
    return memory::desc(dims(s), memory::data_type::f32, tags[s.size() - 3]);
  }
  static const memory::format_tag tags[] = {memory::format_tag::goiw,
                                            memory::format_tag::goihw,
                                            memory::format_tag::goidhw};
  memory::dims d{groups, s[0] / groups};
  for (int64_t i = 1; i < s.size(); ++i) d.push_back(s[i]);
  return memory::desc(d, memory::data_type::f32, tags[s.size() - 3]);
}

/** A primitive with its memory objects; only the data pointers change. */
struct Prepared {
  dnnl::primitive primitive;
  memory src, weights, dst;
};

/** The pass, the three shapes (x, filter, y) and the attributes. */
using Key = std::vector<int64_t>;
struct KeyHash {
  size_t operator()(const Key& k) const {
    size_t h = 0;
    for (int64_t v : k) h = h * 1099511628211ull ^ std::hash<int64_t>()(v);
    return h;
  }
};

Prepared prepare(Pass pass, const ConvAttrs& a, const Shape& x, const Shape& w,
                 const Shape& y) {
  const memory::desc src = activation_md(x), wei = filter_md(w, a.groups),
                     dst = activation_md(y);
  memory::dims strides = dims(a.strides), pl = dims(a.pads_before),
               pr = dims(a.pads_after), dil;
  for (int64_t d : a.dilations) dil.push_back(d - 1);  // oneDNN counts gaps
  const auto algo = dnnl::algorithm::convolution_direct;
  dnnl::convolution_forward::primitive_desc fwd(
      dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training, algo,
                                      src, wei, dst, strides, dil, pl, pr),
      engine());
  Prepared p{dnnl::primitive(), memory(src, engine(), nullptr),
             memory(wei, engine(), nullptr), memory(dst, engine(), nullptr)};
  if (pass == Pass::forward) {
    p.primitive = dnnl::convolution_forward(fwd);
  } else if (pass == Pass::grad_input) {
    p.primitive = dnnl::convolution_backward_data(
        dnnl::convolution_backward_data::primitive_desc(
            dnnl::convolution_backward_data::desc(algo, src, wei, dst, strides,
                                                  dil, pl, pr),
            engine(), fwd));
  } else {
    p.primitive = dnnl::convolution_backward_weights(
        dnnl::convolution_backward_weights::primitive_desc(
            dnnl::convolution_backward_weights::desc(algo, src, wei, dst,
                                                     strides, dil, pl, pr),
            engine(), fwd));
  }
  return p;
}

/** Runs one pass on contiguous float32 x, filter and y (one is the output). */
void run_f32(Pass pass, const ConvAttrs& a, const Tensor& x, const Tensor& w,
             const Tensor& y) {
  const int threads = config::intra_op_threads();
  Key key{static_cast<int64_t>(pass), a.groups, threads};
  for (const Shape* s : {&x.shape(), &w.shape(), &y.shape(), &a.strides,
                         &a.dilations, &a.pads_before, &a.pads_after}) {
    key.push_back(s->size());
    key.insert(key.end(), s->begin(), s->end());
  }
  // Per thread: memory objects are not shared, so no lock on the hot path.
  thread_local std::unordered_map<Key, Prepared, KeyHash> cache;
  thread_local dnnl::stream stream(engine());
  auto it = cache.find(key);
  if (it == cache.end())
    it = cache.emplace(key, prepare(pass, a, x.shape(), w.shape(), y.shape()))
             .first;
  if (omp_get_max_threads() != threads) omp_set_num_threads(threads);
  Prepared& p = it->second;
  p.src.set_data_handle(x.raw_data());
  p.weights.set_data_handle(w.raw_data());
  p.dst.set_data_handle(y.raw_data());
  const int src_arg =
      pass == Pass::grad_input ? DNNL_ARG_DIFF_SRC : DNNL_ARG_SRC;
  const int wei_arg =
      pass == Pass::grad_filter ? DNNL_ARG_DIFF_WEIGHTS : DNNL_ARG_WEIGHTS;
  const int dst_arg = pass == Pass::forward ? DNNL_ARG_DST : DNNL_ARG_DIFF_DST;
  p.primitive.execute(
      stream, {{src_arg, p.src}, {wei_arg, p.weights}, {dst_arg, p.dst}});
  stream.wait();
}

Tensor dense(const Tensor& t) {
  return t.is_contiguous() ? t : materialize(t);
}

/** False (after zero-filling `out`) when there is nothing to sum. */
bool has_work(Inputs in, Tensor& out) {
  if (out.numel() == 0) return false;
  if (in[0].numel() != 0 && in[1].numel() != 0) return true;
  std::fill_n(static_cast<char*>(out.raw_data()),
              out.numel() * itemsize(out.dtype()), 0);
  return false;
}

void conv(const Conv& op, Inputs in, Tensor& out) {
  if (!has_work(in, out)) return;
  const Tensor x = dense(in[0]), w = dense(in[1]);
  if (out.dtype() == float32)
    run_f32(Pass::forward, op.attrs, x, w, out);
  else
    conv_direct_forward(op.attrs, x, w, out);
}

void conv_grad_input(const ConvGradInput& op, Inputs in, Tensor& out) {
  if (!has_work(in, out)) return;
  const Tensor dy = dense(in[0]), w = dense(in[1]);
  if (out.dtype() == float32)
    run_f32(Pass::grad_input, op.attrs, out, w, dy);
  else
    conv_direct_grad_input(op.attrs, dy, w, out);
}

void conv_grad_filter(const ConvGradFilter& op, Inputs in, Tensor& out) {
  if (!has_work(in, out)) return;
  const Tensor x = dense(in[0]), dy = dense(in[1]);
  if (out.dtype() == float32)
    run_f32(Pass::grad_filter, op.attrs, x, out, dy);
  else
    conv_direct_grad_filter(op.attrs, x, dy, out);
}

}  // namespace

void register_conv(Registry& r) {
  r.set<Conv>(DeviceType::cpu, conv, "onednn");
  r.set<ConvGradInput>(DeviceType::cpu, conv_grad_input, "onednn");
  r.set<ConvGradFilter>(DeviceType::cpu, conv_grad_filter, "onednn");
}

}  // namespace tapeflow::cpu
