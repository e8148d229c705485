#include "cpu/onednn/conv_primitive.hpp"

#include <unordered_map>
#include <vector>

#include "core/creation_internal.hpp"
#include "cpu/onednn/channel_blocks.hpp"
#include "cpu/onednn/common.hpp"
#include "cpu/onednn/precision.hpp"
#include "cpu/onednn/signal_shield.hpp"

namespace tapeflow::cpu::onednn {
namespace {

using dnnl::memory;

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
memory::format_tag activation_tag(const Shape& s, bool channels_last = false) {
  static const memory::format_tag tags[] = {memory::format_tag::ncw,
                                            memory::format_tag::nchw,
                                            memory::format_tag::ncdhw};
  return channels_last ? channels_last_tag(s.size()) : tags[s.size() - 3];
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

ConvOperand operand(const memory::desc& user, const memory::desc& internal,
                    bool output) {
  ConvOperand o{memory(user, engine(), nullptr), {}, {}, false};
  if (internal == user) {
    o.internal = o.user;
    return o;
  }
  o.internal = memory(internal, engine(), nullptr);
  o.reordered = true;
  if (!output) o.channel_block = channel_block_of(user, internal);
  if (o.channel_block == 0)
    o.reorder = output ? dnnl::reorder(o.internal, o.user)
                       : dnnl::reorder(o.user, o.internal);
  return o;
}

ConvPrimitive prepare(ConvPass pass, const ConvAttrs& a, const Shape& x,
                      const Shape& w, const Shape& y, bool bias, bool bf16,
                      CallerLayouts layouts) {
  const memory::dims xd = activation_dims(x), wd = filter_dims(w, a.groups),
                     yd = activation_dims(y);
  // The caller's memory (user_*), and the channels-first plain layouts the
  // plain-layout kernels below are asked for.
  const memory::desc src = plain_md(xd, activation_tag(x)),
                     wei = plain_md(wd, filter_tag(w, a.groups)),
                     dst = plain_md(yd, activation_tag(y));
  const memory::desc user_src = plain_md(xd, activation_tag(x, layouts.x_last)),
                     user_dst = plain_md(yd, activation_tag(y, layouts.y_last));
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
  ConvPrimitive p;
  if (pass == ConvPass::forward) {
    p.primitive = dnnl::convolution_forward(fwd);
    p.shielded = moves_stack_pointer(fwd);
    if (bias) p.bias = memory(bias_md, engine(), nullptr);
    p.src = operand(user_src, fwd.src_desc(), false);
    p.weights = operand(wei, fwd.weights_desc(), false);
    p.dst = operand(user_dst, fwd.dst_desc(), true);
  } else if (pass == ConvPass::grad_input) {
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
    p.shielded = moves_stack_pointer(pd);
    p.src = operand(user_src, pd.diff_src_desc(), true);
    p.weights = operand(wei, pd.weights_desc(), false);
    p.dst = operand(user_dst, pd.diff_dst_desc(), false);
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
    p.shielded = moves_stack_pointer(pd);
    p.src = operand(user_src, pd.src_desc(), false);
    p.weights = operand(wei, pd.diff_weights_desc(), true);
    p.dst = operand(user_dst, pd.diff_dst_desc(), false);
  }
  return p;
}

}  // namespace

bool is_channels_last(const Tensor& t) {
  const Shape &s = t.shape(), &st = t.strides();
  if (s.size() < 3 || s.size() > 5) return false;
  // Axes of one element may have any stride: no index moves along them.
  int64_t next = s[1];  // the stride the last spatial axis must have
  for (size_t i = s.size() - 1; i >= 2; --i) {
    if (s[i] != 1 && st[i] != next) return false;
    next *= s[i];
  }
  return (s[1] == 1 || st[1] == 1) && (s[0] == 1 || st[0] == next);
}

CallerLayouts caller_layouts(const Tensor& x, const Tensor& y) {
  return {!x.is_contiguous() && is_channels_last(x),
          !y.is_contiguous() && is_channels_last(y)};
}

ConvPrimitive& conv_primitive(ConvPass pass, const ConvAttrs& a, const Shape& x,
                              const Shape& w, const Shape& y, bool bias,
                              bool bf16, int threads, CallerLayouts layouts) {
  // The pass, the caller's layouts, the three shapes (x, filter, y) and the
  // attributes.
  std::vector<int64_t> key{static_cast<int64_t>(pass),
                           a.groups,
                           threads,
                           bias,
                           bf16,
                           layouts.x_last,
                           layouts.y_last};
  for (const Shape* s :
       {&x, &w, &y, &a.strides, &a.dilations, &a.pads_before, &a.pads_after}) {
    key.push_back(s->size());
    key.insert(key.end(), s->begin(), s->end());
  }
  // Per thread: memory objects are not shared, so no lock on the hot path.
  thread_local std::unordered_map<std::vector<int64_t>, ConvPrimitive,
                                  Int64sHash>
      cache;
  auto it = cache.find(key);
  if (it == cache.end()) {
    ConvPrimitive p = prepare(pass, a, x, w, y, bias, bf16, layouts);
    p.threads = threads;
    it = cache.emplace(key, std::move(p)).first;
  }
  return it->second;
}

ConvOperand& output_of(ConvPrimitive& p, ConvPass pass) {
  return pass == ConvPass::forward      ? p.dst
         : pass == ConvPass::grad_input ? p.src
                                        : p.weights;
}

void run_primitive(ConvPrimitive& p, ConvPass pass, const Tensor& bias,
                   dnnl::stream& stream) {
  const int src_arg =
      pass == ConvPass::grad_input ? DNNL_ARG_DIFF_SRC : DNNL_ARG_SRC;
  const int wei_arg =
      pass == ConvPass::grad_filter ? DNNL_ARG_DIFF_WEIGHTS : DNNL_ARG_WEIGHTS;
  const int dst_arg =
      pass == ConvPass::forward ? DNNL_ARG_DST : DNNL_ARG_DIFF_DST;
  std::unordered_map<int, memory> args{{src_arg, p.src.internal},
                                       {wei_arg, p.weights.internal},
                                       {dst_arg, p.dst.internal}};
  if (bias.defined()) {
    p.bias.set_data_handle(bias.raw_data());
    args.emplace(DNNL_ARG_BIAS, p.bias);
  }
  const SignalShield shield(p.shielded, p.threads);
  p.primitive.execute(stream, args);
}

void reorder_input(ConvOperand& o, dnnl::stream& stream) {
  if (o.channel_block == 0) {
    o.reorder.execute(stream, o.user, o.internal);
    return;
  }
  stream.wait();  // the buffer may still be a running primitive's operand
  copy_into_channel_blocks(o.user, o.internal, o.channel_block);
}

void reorder_output(ConvPrimitive& p, ConvPass pass, dnnl::stream& stream) {
  ConvOperand& output = output_of(p, pass);
  if (output.reordered)
    output.reorder.execute(stream, output.internal, output.user);
}

Tensor buffer_for(const memory::desc& md) {
  const int64_t floats = (md.get_size() + sizeof(float) - 1) / sizeof(float);
  return empty_tensor(Shape{floats}, float32, Device::cpu());
}

}  // namespace tapeflow::cpu::onednn
