// Convolutions: float32 through oneDNN's forward (with the optional bias, and
// for ConvRelu the rectifier over y while it is in cache),
// backward-data and backward-weights primitives on plain layouts
// (conv_primitive.cpp; a batch whose activations outgrow a core's cache in
// chunks of images, conv_chunks.cpp), float64 through the direct loops of
// cpu/conv_direct.cpp. The float32 filter gradient of one- and two-channel
// inputs at stride 1 in 2-d goes to cpu/conv_few_channels.cpp instead, and so
// does their forward outside precision `medium`, under which the inputs of
// each pass reach oneDNN as bfloat16 (converted by the same reorder that
// blocks them) and the output stays float32.
#include <cstring>
#include <dnnl.hpp>
#include <string>

#include "core/creation_internal.hpp"
#include "cpu/conv_direct.hpp"
#include "cpu/conv_few_channels.hpp"
#include "cpu/onednn/common.hpp"
#include "cpu/onednn/conv_chunks.hpp"
#include "cpu/onednn/converted_operand.hpp"
#include "cpu/onednn/precision.hpp"
#include "cpu/relu_in_place.hpp"
#include "ops/nn/conv_ops.hpp"

namespace tapeflow::cpu {
namespace {

using dnnl::memory;
using onednn::ConvOperand;
using onednn::ConvPass;
using onednn::ConvPrimitive;

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
Tensor convert_input(ConvOperand& o, const Tensor& t,
                     std::span<const ConvertedOperand> take,
                     ConvertedOperands* leave, dnnl::stream& stream) {
  const memory::desc& md = o.internal.get_desc();
  for (const ConvertedOperand& c : take)
    if (converted_from(c, t) && same_layout(c.layout, md)) {
      o.internal.set_data_handle(c.data.raw_data());
      return c.data;
    }
  Tensor buffer = onednn::buffer_for(md);
  o.internal.set_data_handle(buffer.raw_data());
  onednn::reorder_input(o, stream);
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

/** Runs one pass on the whole batch in one primitive. */
void run_whole(ConvPrimitive& p, ConvPass pass, const Tensor& x,
               const Tensor& w, const Tensor& y, const Tensor& bias,
               const Handoff& handoff, dnnl::stream& stream) {
  p.src.user.set_data_handle(x.raw_data());
  p.weights.user.set_data_handle(w.raw_data());
  p.dst.user.set_data_handle(y.raw_data());
  const ConvOperand* output = &onednn::output_of(p, pass);
  Tensor buffers[3];  // per-call internal memory, alive until the pass ends
  const std::pair<ConvOperand*, const Tensor*> operands[] = {
      {&p.src, &x}, {&p.weights, &w}, {&p.dst, &y}};
  for (int i = 0; i < 3; ++i) {
    auto [o, t] = operands[i];
    if (!o->reordered) continue;
    if (o == output) {
      buffers[i] = onednn::buffer_for(o->internal.get_desc());
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
  onednn::run_primitive(p, pass, bias, stream);
  onednn::reorder_output(p, pass, stream);
  stream.wait();
}

/**
 * Runs one pass on float32 x, filter and y (one is the output), contiguous
 * but for an input activation that may be channels-last;
 * `bias` (forward only) is contiguous float32 or undefined, and `relu`
 * (forward only) rectifies y as it comes out.
 */
void run_f32(ConvPass pass, const ConvAttrs& a, const Tensor& x,
             const Tensor& w, const Tensor& y, const Tensor& bias, bool bf16,
             const Handoff& handoff, bool relu = false) {
  const int threads = onednn::call_threads();
  dnnl::stream& stream = onednn::stream();
  // Before any primitive is made: each takes its thread count from OpenMP
  // when made, not when run.
  onednn::sync_threads(threads);
  ConvPrimitive& whole = onednn::conv_primitive(
      pass, a, x.shape(), w.shape(), y.shape(), bias.defined(), bf16, threads,
      onednn::caller_layouts(x, y));
  if (whole.images_per_chunk == 0)
    whole.images_per_chunk =
        onednn::images_per_chunk(whole, pass, x.shape()[0], threads);
  // The filter gradient takes the conversions the forward and the input
  // gradient left (whole-batch tensors in a whole-batch layout, which no
  // chunk takes): then it runs whole.
  const bool takes = !handoff.take_x.empty() || !handoff.take_dy.empty();
  if (whole.images_per_chunk < x.shape()[0] && !takes) {
    // A chunked forward or input gradient converts its input activation (x,
    // dy) into the whole batch's layout for the filter gradient to take,
    // where that fits in cache.
    const bool is_filter = pass == ConvPass::grad_filter;
    const ConvOperand& input =
        pass == ConvPass::forward ? whole.src : whole.dst;
    const memory::desc layout = input.internal.get_desc();
    const bool leaves = handoff.leave && !is_filter && input.reordered &&
                        onednn::hands_over_chunked(whole);
    const Tensor converted = onednn::run_chunked(
        pass, a, x, w, y, bias, bf16, threads, whole.images_per_chunk, relu,
        leaves ? &layout : nullptr);
    if (converted.defined())
      handoff.leave->operands.push_back(
          {pass == ConvPass::forward ? x : y, converted, layout_name(layout)});
    return;
  }
  run_whole(whole, pass, x, w, y, bias, handoff, stream);
  // Not oneDNN's relu post-op: that one turns NaN into 0.
  if (relu) relu_in_place(y);
}

/**
 * An activation input (x, dy) as the oneDNN passes take it: as it is where
 * contiguous or channels-last (NHWC data seen channels-first: the reorder
 * into oneDNN's layout reads it in place), else a contiguous copy.
 */
Tensor onednn_activation(const Tensor& t) {
  return onednn::is_channels_last(t) ? t : materialize(t);
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

/** Conv, and ConvRelu with `relu`: y rectified where each path writes it. */
void conv_forward(const ConvAttrs& attrs, Inputs in, const Outputs& outs,
                  bool relu) {
  Tensor& out = outs[0];
  const Tensor bias = in.size() == 3 ? materialize(in[2]) : Tensor();
  if (!has_work(in, out)) {
    if (bias.defined() && out.numel() != 0) add_bias(bias, out);
    if (relu) relu_in_place(out);
    return;
  }
  const Tensor w = materialize(in[1]);
  const bool bf16 = multiply_in_bf16();
  if (out.dtype() == float32 && !bf16 &&
      few_channels_conv_forward_applies(attrs, in[0].shape(), w.shape())) {
    few_channels_conv_forward(attrs, materialize(in[0]), w, bias, out, relu);
  } else if (out.dtype() == float32) {
    auto left = payload_for(outs, bf16);
    run_f32(ConvPass::forward, attrs, onednn_activation(in[0]), w, out, bias,
            bf16, {.leave = left.get()}, relu);
    outs.leave(std::move(left));
  } else {
    conv_direct_forward(attrs, materialize(in[0]), w, out);
    if (bias.defined()) add_bias(bias, out);
    if (relu) relu_in_place(out);
  }
}

void conv(const Conv& op, Inputs in, const Outputs& outs) {
  conv_forward(op.attrs, in, outs, false);
}
void conv_relu(const ConvRelu& op, Inputs in, const Outputs& outs) {
  conv_forward(op.attrs, in, outs, true);
}

void conv_grad_input(const ConvGradInput& op, Inputs in, const Outputs& outs) {
  Tensor& out = outs[0];
  if (!has_work(in, out)) return;
  const Tensor w = materialize(in[1]);
  if (out.dtype() == float32) {
    const bool bf16 = multiply_in_bf16();
    auto left = payload_for(outs, bf16);
    run_f32(ConvPass::grad_input, op.attrs, out, w, onednn_activation(in[0]),
            Tensor(), bf16, {.leave = left.get()});
    outs.leave(std::move(left));
  } else {
    conv_direct_grad_input(op.attrs, materialize(in[0]), w, out);
  }
}

void conv_grad_filter(const ConvGradFilter& op, Inputs in,
                      const Outputs& outs) {
  Tensor& out = outs[0];
  if (!has_work(in, out)) return;
  if (out.dtype() == float32 &&
      !few_channels_conv_applies(op.attrs, in[0].shape(), out.shape())) {
    const bool bf16 = multiply_in_bf16();
    run_f32(ConvPass::grad_filter, op.attrs, onednn_activation(in[0]), out,
            onednn_activation(in[1]), Tensor(), bf16,
            {.take_x = converted_in(op.x_converted, bf16),
             .take_dy = converted_in(op.dy_converted, bf16)});
    return;
  }
  const Tensor x = materialize(in[0]), dy = materialize(in[1]);
  if (out.dtype() == float32)
    few_channels_conv_grad_filter(op.attrs, x, dy, out);
  else
    conv_direct_grad_filter(op.attrs, x, dy, out);
}

}  // namespace

void register_conv(Registry& r) {
  r.set<Conv>(DeviceType::cpu, conv, "onednn");
  r.set<ConvRelu>(DeviceType::cpu, conv_relu, "onednn");
  r.set<ConvGradInput>(DeviceType::cpu, conv_grad_input, "onednn");
  r.set<ConvGradFilter>(DeviceType::cpu, conv_grad_filter, "onednn");
}

}  // namespace tapeflow::cpu
