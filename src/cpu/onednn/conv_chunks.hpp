// A convolution pass over activations larger than a core's cache, run a few
// images at a time so that the reorders into and out of oneDNN's blocked
// layouts work in cache: there oneDNN's reorders run ~3.5x faster than from
// memory to memory (32x64x56x56 to nChw16c and back: 0.63 against 2.4 ms
// each at 1 thread on Zen 4), and the chunks read and write memory no more
// than the whole pass on blocked tensors would.
#pragma once

#include "cpu/onednn/conv_primitive.hpp"

namespace tapeflow::cpu::onednn {

/**
 * Images per chunk for `pass` on `n` images whose whole-batch primitive for
 * `threads` threads is `whole`; all `n` where chunks do not pay: activations
 * that fit in one chunk (for the filter gradient and bfloat16 activations,
 * in the L3), ones a primitive takes as they are, or too few images to
 * share evenly between the threads.
 */
int64_t images_per_chunk(const ConvPrimitive& whole, ConvPass pass, int64_t n,
                         int threads);

/**
 * Whether a pass in chunks converts its input activation for the whole
 * batch, for a later pass to take: while the whole batch's blocked
 * activations fit in the L3 (beyond, writing the blocked copy to memory
 * costs more than the later pass's own reorders in cache). Passes on
 * bfloat16 activations, in chunks only beyond that size, never do.
 */
bool hands_over_chunked(const ConvPrimitive& whole);

/**
 * Runs `pass` on float32 x, filter and y (one is the output; each
 * contiguous, or an input activation channels-last) `images_per_chunk`
 * images at a time, the batch shared between `threads` threads. Each
 * thread runs its own images (a chunk's reorders and primitive in one
 * core's cache: shared between cores, its lines crossed between the two
 * vCPUs of a VM at up to 4x the cost). The filter gradient
 * sums its chunks; a forward with `relu` rectifies each chunk of y as it
 * comes out. Given `whole_input`, a layout of the whole batch, the forward
 * and the input gradient convert their input activation (x, dy) into it a
 * chunk at a time and return it for a later pass, when every chunk's layout
 * is a slice of it; otherwise (and for the filter gradient) it returns an
 * empty Tensor.
 */
Tensor run_chunked(ConvPass pass, const ConvAttrs& a, const Tensor& x,
                   const Tensor& w, const Tensor& y, const Tensor& bias,
                   bool bf16, int threads, int64_t images_per_chunk, bool relu,
                   const dnnl::memory::desc* whole_input = nullptr);

}  // namespace tapeflow::cpu::onednn
