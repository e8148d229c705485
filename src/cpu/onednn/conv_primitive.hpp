// oneDNN's convolution primitives on tapeflow's plain layouts: for one pass
// and its shapes, the primitive and, per operand, the caller's plain memory
// (contiguous, or channels-last for an input activation) and the
// primitive's own with the reorder between them, made once per thread and
// cached. conv.cpp runs one on a whole batch, conv_chunks.cpp a few
// images at a time.
#pragma once

#include <dnnl.hpp>

#include "ops/nn/conv_ops.hpp"
#include "tapeflow/core/tensor.hpp"

namespace tapeflow::cpu::onednn {

enum class ConvPass : int64_t { forward, grad_input, grad_filter };

/**
 * One operand: the caller's plain memory and, where the primitive prefers
 * another layout, the primitive's memory with the reorder between the two
 * (plain -> internal for inputs, internal -> plain for the output). Both
 * memories get their data pointers per call.
 */
struct ConvOperand {
  dnnl::memory user, internal;
  dnnl::reorder reorder;
  bool reordered = false;
  // An input's block width where channel_blocks.cpp copies it in (whole
  // runs of channels, where oneDNN 2.6 takes a slow generic reorder); then
  // `reorder` is empty. 0 otherwise.
  int channel_block = 0;
};
/** A primitive with its operands; only the data pointers change. */
struct ConvPrimitive {
  dnnl::primitive primitive;
  ConvOperand src, weights, dst;  // x, filter, y: one of them is the output
  dnnl::memory bias;              // forward only; empty without a bias
  int64_t images_per_chunk = 0;   // conv_chunks.cpp's, once asked
  int threads = 1;                // the OpenMP team it was made for
  bool shielded = false;          // runs with the asynchronous signals blocked
};

/**
 * Whether `t`, of rank 3 to 5 and seen channels-first, holds its elements
 * channels-last and dense: an NHWC tensor's channels-first view, which
 * oneDNN reads in place instead of from a contiguous copy.
 */
bool is_channels_last(const Tensor& t);

/**
 * Which of the caller's x and y are channels-last (is_channels_last) rather
 * than contiguous; a pass's output is always contiguous.
 */
struct CallerLayouts {
  bool x_last = false, y_last = false;
};
CallerLayouts caller_layouts(const Tensor& x, const Tensor& y);

/**
 * The calling thread's cached primitive of `pass` on these shapes and the
 * caller's layouts, made on first use. Call after
 * onednn::sync_threads(threads): a primitive keeps the thread count OpenMP
 * had when it was made.
 */
ConvPrimitive& conv_primitive(ConvPass pass, const ConvAttrs& a, const Shape& x,
                              const Shape& w, const Shape& y, bool bias,
                              bool bf16, int threads,
                              CallerLayouts layouts = {});

/** The operand `pass` writes. */
ConvOperand& output_of(ConvPrimitive& p, ConvPass pass);

/** Runs `p` on the internal memories set (`bias` only in the forward). */
void run_primitive(ConvPrimitive& p, ConvPass pass, const Tensor& bias,
                   dnnl::stream& stream);

/** Reorders input operand `o` from the caller's memory into its own. */
void reorder_input(ConvOperand& o, dnnl::stream& stream);

/** Reorders the output of `pass` from its internal memory to the caller's. */
void reorder_output(ConvPrimitive& p, ConvPass pass, dnnl::stream& stream);

/** A float32 tensor with room for `md`: the per-call buffer of an operand. */
Tensor buffer_for(const dnnl::memory::desc& md);

}  // namespace tapeflow::cpu::onednn
