// Convolutions: float32 through oneDNN's forward (with the optional bias),
// backward-data and backward-weights primitives on plain layouts (cached per
// thread by shapes, attributes and operand type), float64 through the direct
// loops of cpu/conv_direct.cpp. The float32 filter gradient of one- and
// two-channel inputs at stride 1 in 2-d goes to cpu/conv_few_channels.cpp
// instead, and so does their forward outside precision `medium`, under which
// the inputs of each pass reach oneDNN as bfloat16 (converted by the same
// reorder that blocks them) and the output stays float32.
#include <cstring>
#include <dnnl.hpp>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/creation_internal.hpp"
#include "cpu/conv_direct.hpp"
#include "cpu/conv_few_channels.hpp"
#include "cpu/onednn/common.hpp"
#include "cpu/onednn/converted_operand.hpp"
#include "cpu/onednn/precision.hpp"
#include "ops/nn/conv_ops.hpp"

namespace tapeflow::cpu {
namespace {

using dnnl::memory;
using onednn::engine;
enum class Pass : int64_t { forward, grad_input, grad_filter };

memory::dims dims(const Shape& s) {
  return memory::dims(s.begin(), s.end());
}

memory::desc plain_md(const memory::dims& d, memory::format_tag tag,
                      memory::data_type type = memory::data_type::f32) {
  return memory::desc(d, type, tag);
}
memory::desc any_md(const memory::dims& d,
                    memory::data_type type = memory::data_type::f32) {
  return memory::desc(d, type, memory::format_tag::any);
}
/** Activations ncw/nchw/ncdhw. */
memory::dims activation_dims(const Shape& s) {
  return dims(s);
}
memory::format_tag activation_tag(const Shape& s) {
  static const memory::format_tag tags[] = {memory::format_tag::ncw,
                                            memory::format_tag::nchw,
                                            memory::format_tag::ncdhw};
  return tags[s.size() - 3];
}
/** Filters oi*, or goi* with the groups split off the out-channels. */
memory::dims filter_dims(const Shape& s, int64_t groups) {
  if (groups == 1) return dims(s);
  memory::dims d{groups, s[0] / groups};
  for (int64_t i = 1; i < s.size(); ++i) d.push_back(s[i]);
  return d;
}
memory::format_tag filter_tag(const Shape& s, int64_t groups) {
  static const memory::format_tag plain[] = {memory::format_tag::oiw,
                                             memory::format_tag::oihw,
                                             memory::format_tag::oidhw};
  static const memory::format_tag grouped[] = {memory::format_tag::goiw,
                                               memory::format_tag::goihw,
                                               memory::format_tag::goidhw};
  return (groups == 1 ? plain : grouped)[s.size() - 3];
}

/**
 * One operand: the caller's plain memory and, where the primitive prefers
 * another layout, the primitive's memory with the reorder between the two
 * (plain -> internal for inputs, internal -> plain for the output). Both
 * memories get their data pointers per call.
 */
struct Operand {
  memory user, internal;
  dnnl::reorder reorder;
  bool reordered = false;
};
Operand operand(const memory::desc& user, const memory::desc& internal,
                bool output) {
  Operand o{memory(user, engine(), nullptr), {}, {}, false};
  if (internal == user) {
    o.internal = o.user;
    return o;
  }
  o.internal = memory(internal, engine(), nullptr);
  o.reorder = output ? dnnl::reorder(o.internal, o.user)
                     : dnnl::reorder(o.user, o.internal);
  o.reordered = true;
  return o;
}

/** A primitive with its operands; only the data pointers change. */
struct Prepared {
  dnnl::primitive primitive;
  Operand src, weights, dst;  // x, filter, y: one of them is the output
  memory bias;                // forward only; empty without a bias
};

/** The pass, the three shapes (x, filter, y) and the attributes. */
using Key = std::vector<int64_t>;

Prepared prepare(Pass pass, const ConvAttrs& a, const Shape& x, const Shape& w,
                 const Shape& y, bool bias, bool bf16) {
  const memory::dims xd = activation_dims(x), wd = filter_dims(w, a.groups),
                     yd = activation_dims(y);
  const memory::desc src = plain_md(xd, activation_tag(x)),
                     wei = plain_md(wd, filter_tag(w, a.groups)),
                     dst = plain_md(yd, activation_tag(y));
  // Each pass reads two of x, filter and y (in `in` precision) and writes
  // the third in float32.
  const memory::data_type in = operand_type(bf16);
  const memory::desc src_in = any_md(xd, in), wei_in = any_md(wd, in),
                     dst_in = any_md(yd, in);
  const memory::desc src_out = any_md(xd), wei_out = any_md(wd),
                     dst_out = any_md(yd);
  memory::dims strides = dims(a.strides), pl = dims(a.pads_before),
               pr = dims(a.pads_after), dil;
  for (int64_t d : a.dilations) dil.push_back(d - 1);  // oneDNN counts gaps
  const auto algo = dnnl::algorithm::convolution_direct;
  // A zero desc means no bias; the backward passes never have one.
  const memory::desc bias_md =
      bias ? plain_md({w[0]}, memory::format_tag::a) : memory::desc();
  dnnl::convolution_forward::primitive_desc fwd(
      dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training, algo,
                                      src_in, wei_in, bias_md, dst_out, strides,
                                      dil, pl, pr),
      engine());
  Prepared p;
  if (pass == Pass::forward) {
    p.primitive = dnnl::convolution_forward(fwd);
    if (bias) p.bias = memory(bias_md, engine(), nullptr);
    p.src = operand(src, fwd.src_desc(), false);
    p.weights = operand(wei, fwd.weights_desc(), false);
    p.dst = operand(dst, fwd.dst_desc(), true);
  } else if (pass == Pass::grad_input) {
    // oneDNN's blocked backward-data kernel pads the input channels to 16, so
    // with fewer (a first layer's 1 or 3) it does up to 16x the work; its
    // plain-layout kernel is then faster (N=64, 1->32, 28x28, k5: 1.6 ms
    // against 15 ms at 1 thread). Grouped ones keep their depthwise kernels.
    const bool plain = a.groups == 1 && x[1] < 16;
    dnnl::convolution_backward_data::primitive_desc pd(
        plain ? dnnl::convolution_backward_data::desc(
                    algo, src, plain_md(wd, filter_tag(w, a.groups), in),
                    plain_md(yd, activation_tag(y), in), strides, dil, pl, pr)
              : dnnl::convolution_backward_data::desc(
                    algo, src_out, wei_in, dst_in, strides, dil, pl, pr),
        engine(), fwd);
    p.primitive = dnnl::convolution_backward_data(pd);
    p.src = operand(src, pd.diff_src_desc(), true);
    p.weights = operand(wei, pd.weights_desc(), false);
    p.dst = operand(dst, pd.diff_dst_desc(), false);
  } else {
    // With one input channel the blocked backward-weights kernel pads it to
    // 8 (AVX2) or 16, and its flat-input variant only takes three; oneDNN's
    // GEMM kernel on plain layouts is then faster and needs no reorder of x
    // or dy (N=64, 1->32, 28x28, k5, stride 2: 0.55 ms against 1.55 ms at
    // 2 threads; 7x7: 0.85 against 3.8). The stride-1 2-d ones go to
    // conv_few_channels.cpp instead. bfloat16 keeps the blocked kernel.
    const bool plain = a.groups == 1 && x[1] == 1 && !bf16;
    dnnl::convolution_backward_weights::primitive_desc pd(
        plain ? dnnl::convolution_backward_weights::desc(
                    algo, src, wei_out, dst, strides, dil, pl, pr)
              : dnnl::convolution_backward_weights::desc(
                    algo, src_in, wei_out, dst_in, strides, dil, pl, pr),
        engine(), fwd);
    p.primitive = dnnl::convolution_backward_weights(pd);
    p.src = operand(src, pd.src_desc(), false);
    p.weights = operand(wei, pd.diff_weights_desc(), true);
    p.dst = operand(dst, pd.diff_dst_desc(), false);
  }
  return p;
}

/** A float32 tensor with room for `md`: the per-call buffer of an operand. */
Tensor buffer_for(const memory::desc& md) {
  const int64_t floats = (md.get_size() + sizeof(float) - 1) / sizeof(float);
  return empty_tensor(Shape{floats}, float32, Device::cpu());
}

/** A memory desc as bytes, the backend-neutral form ConvertedOperand keeps. */
std::string layout_name(const memory::desc& md) {
  return std::string(reinterpret_cast<const char*>(&md.data), sizeof md.data);
}
bool same_layout(const std::string& name, const memory::desc& md) {
  if (name.size() != sizeof md.data) return false;
  dnnl_memory_desc_t kept;
  std::memcpy(&kept, name.data(), sizeof kept);
  return memory::desc(kept) == md;
}

/** True when `t` is the very tensor `c` was converted from. */
bool converted_from(const ConvertedOperand& c, const Tensor& t) {
  return c.data.defined() && c.source.raw_data() == t.raw_data() &&
         c.source.dtype() == t.dtype() && c.source.shape() == t.shape() &&
         c.source.strides() == t.strides();
}

/**
 * The input `t` in operand `o`'s internal layout, set as o.internal's data:
 * taken from `take` when one of those was converted from `t` into this
 * layout, else reordered into a buffer that is added to `leave` (when given)
 * for a later pass.
 */
Tensor convert_input(Operand& o, const Tensor& t,
                     std::span<const ConvertedOperand> take,
                     ConvertedOperands* leave, dnnl::stream& stream) {
  const memory::desc& md = o.internal.get_desc();
  for (const ConvertedOperand& c : take)
    if (converted_from(c, t) && same_layout(c.layout, md)) {
      o.internal.set_data_handle(c.data.raw_data());
      return c.data;
    }
  Tensor buffer = buffer_for(md);
  o.internal.set_data_handle(buffer.raw_data());
  o.reorder.execute(stream, o.user, o.internal);
  if (leave) leave->operands.push_back({t, buffer, layout_name(md)});
  return buffer;
}

/**
 * What one pass exchanges with the other passes of its op: the converted
 * operands it may take (x and dy, for the filter gradient) and where it
 * leaves the activation it converts (x in the forward, dy in the input
 * gradient), when something keeps it.
 */
struct Handoff {
  std::span<const ConvertedOperand> take_x = {}, take_dy = {};
  ConvertedOperands* leave = nullptr;
};

/**
 * Runs one pass on contiguous float32 x, filter and y (one is the output);
 * `bias` (forward only) is contiguous float32 or undefined.
 */
void run_f32(Pass pass, const ConvAttrs& a, const Tensor& x, const Tensor& w,
             const Tensor& y, const Tensor& bias, bool bf16,
             const Handoff& handoff) {
  const int threads = config::intra_op_threads();
  Key key{static_cast<int64_t>(pass), a.groups, threads, bias.defined(), bf16};
  for (const Shape* s : {&x.shape(), &w.shape(), &y.shape(), &a.strides,
                         &a.dilations, &a.pads_before, &a.pads_after}) {
    key.push_back(s->size());
    key.insert(key.end(), s->begin(), s->end());
  }
  // Per thread: memory objects are not shared, so no lock on the hot path.
  thread_local std::unordered_map<Key, Prepared, onednn::Int64sHash> cache;
  dnnl::stream& stream = onednn::stream();
  // Before any primitive is made: each takes its thread count from OpenMP
  // when made, not when run.
  onednn::sync_threads(threads);
  auto it = cache.find(key);
  if (it == cache.end())
    it = cache
             .emplace(key, prepare(pass, a, x.shape(), w.shape(), y.shape(),
                                   bias.defined(), bf16))
             .first;
  Prepared& p = it->second;
  p.src.user.set_data_handle(x.raw_data());
  p.weights.user.set_data_handle(w.raw_data());
  p.dst.user.set_data_handle(y.raw_data());
  Operand* output = pass == Pass::forward      ? &p.dst
                    : pass == Pass::grad_input ? &p.src
                                               : &p.weights;
  Tensor buffers[3];  // per-call internal memory, alive until the pass ends
  const std::pair<Operand*, const Tensor*> operands[] = {
      {&p.src, &x}, {&p.weights, &w}, {&p.dst, &y}};
  for (int i = 0; i < 3; ++i) {
    auto [o, t] = operands[i];
    if (!o->reordered) continue;
    if (o == output) {
      buffers[i] = buffer_for(o->internal.get_desc());
      o->internal.set_data_handle(buffers[i].raw_data());
      continue;
    }
    buffers[i] =
        convert_input(*o, *t,
                      o == &p.src   ? handoff.take_x
                      : o == &p.dst ? handoff.take_dy
                                    : std::span<const ConvertedOperand>(),
                      o == &p.weights ? nullptr : handoff.leave, stream);
  }
  const int src_arg =
      pass == Pass::grad_input ? DNNL_ARG_DIFF_SRC : DNNL_ARG_SRC;
  const int wei_arg =
      pass == Pass::grad_filter ? DNNL_ARG_DIFF_WEIGHTS : DNNL_ARG_WEIGHTS;
  const int dst_arg = pass == Pass::forward ? DNNL_ARG_DST : DNNL_ARG_DIFF_DST;
  std::unordered_map<int, memory> args{{src_arg, p.src.internal},
                                       {wei_arg, p.weights.internal},
                                       {dst_arg, p.dst.internal}};
  if (bias.defined()) {
    p.bias.set_data_handle(bias.raw_data());
    args.emplace(DNNL_ARG_BIAS, p.bias);
  }
  p.primitive.execute(stream, args);
  if (output->reordered)
    output->reorder.execute(stream, output->internal, output->user);
  stream.wait();
}

/** False (after zero-filling `out`) when there is nothing to sum. */
bool has_work(Inputs in, Tensor& out) {
  if (out.numel() == 0) return false;
  if (in[0].numel() != 0 && in[1].numel() != 0) return true;
  std::fill_n(static_cast<char*>(out.raw_data()),
              out.numel() * itemsize(out.dtype()), 0);
  return false;
}

/** y += bias along axis 1, where oneDNN does not add it. */
template <class T>
void add_bias(const Tensor& bias, Tensor& y) {
  const int64_t n = y.shape()[0], c = y.shape()[1];
  const int64_t plane = y.numel() / (n * c);
  T* out = y.data<T>();
  const T* b = bias.data<T>();
  for (int64_t i = 0; i < n * c; ++i)
    for (int64_t k = 0; k < plane; ++k) out[i * plane + k] += b[i % c];
}
void add_bias(const Tensor& bias, Tensor& y) {
  if (y.dtype() == float32)
    add_bias<float>(bias, y);
  else
    add_bias<double>(bias, y);
}

/**
 * The payload a pass leaves when something keeps it (a recording tape, or
 * the gradient rule that hands it to the filter gradient); null otherwise.
 */
std::shared_ptr<ConvertedOperands> payload_for(const Outputs& out, bool bf16) {
  return out.keeps_payload() ? std::make_shared<ConvertedOperands>(bf16)
                             : nullptr;
}

void conv(const Conv& op, Inputs in, const Outputs& outs) {
  Tensor& out = outs[0];
  const Tensor bias = in.size() == 3 ? materialize(in[2]) : Tensor();
  if (!has_work(in, out)) {
    if (bias.defined() && out.numel() != 0) add_bias(bias, out);
    return;
  }
  const Tensor x = materialize(in[0]), w = materialize(in[1]);
  const bool bf16 = multiply_in_bf16();
  if (out.dtype() == float32 && !bf16 &&
      few_channels_conv_forward_applies(op.attrs, x.shape(), w.shape())) {
    few_channels_conv_forward(op.attrs, x, w, bias, out);
  } else if (out.dtype() == float32) {
    auto left = payload_for(outs, bf16);
    run_f32(Pass::forward, op.attrs, x, w, out, bias, bf16,
            {.leave = left.get()});
    outs.leave(std::move(left));
  } else {
    conv_direct_forward(op.attrs, x, w, out);
    if (bias.defined()) add_bias(bias, out);
  }
}

void conv_grad_input(const ConvGradInput& op, Inputs in, const Outputs& outs) {
  Tensor& out = outs[0];
  if (!has_work(in, out)) return;
  const Tensor dy = materialize(in[0]), w = materialize(in[1]);
  if (out.dtype() == float32) {
    const bool bf16 = multiply_in_bf16();
    auto left = payload_for(outs, bf16);
    run_f32(Pass::grad_input, op.attrs, out, w, dy, Tensor(), bf16,
            {.leave = left.get()});
    outs.leave(std::move(left));
  } else {
    conv_direct_grad_input(op.attrs, dy, w, out);
  }
}

void conv_grad_filter(const ConvGradFilter& op, Inputs in,
                      const Outputs& outs) {
  Tensor& out = outs[0];
  if (!has_work(in, out)) return;
  const Tensor x = materialize(in[0]), dy = materialize(in[1]);
  if (out.dtype() == float32 &&
      few_channels_conv_applies(op.attrs, x.shape(), out.shape())) {
    few_channels_conv_grad_filter(op.attrs, x, dy, out);
  } else if (out.dtype() == float32) {
    const bool bf16 = multiply_in_bf16();
    run_f32(Pass::grad_filter, op.attrs, x, out, dy, Tensor(), bf16,
            {.take_x = converted_in(op.x_converted, bf16),
             .take_dy = converted_in(op.dy_converted, bf16)});
  } else {
    conv_direct_grad_filter(op.attrs, x, dy, out);
  }
}

}  // namespace

void register_conv(Registry& r) {
  r.set<Conv>(DeviceType::cpu, conv, "onednn");
  r.set<ConvGradInput>(DeviceType::cpu, conv_grad_input, "onednn");
  r.set<ConvGradFilter>(DeviceType::cpu, conv_grad_filter, "onednn");
}

}  // namespace tapeflow::cpu
