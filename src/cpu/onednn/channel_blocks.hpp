// Channels-last float32 activations (nwc, nhwc, ndhwc) copied into oneDNN's
// channel blocks (nCw16c, nChw16c, nCdhw16c and their 8-wide forms): each
// position's channels are cut into runs one block wide, written where their
// block keeps that position. oneDNN 2.6 gives this reorder to its generic
// jit:uni kernel, which walks the destination and reads the source once per
// block: on 13 images of 64 x 56 x 56 it takes 1.50 ms against 0.72 ms for
// its NCHW reorder (1 thread), and 3x as long in a convolution's chunks.
#pragma once

#include <dnnl.hpp>

namespace tapeflow::cpu::onednn {

/** nwc, nhwc or ndhwc: the channels-last tag of a rank 3 to 5 activation. */
dnnl::memory::format_tag channels_last_tag(size_t rank);

/**
 * The block width (8 or 16) where `from` is channels-last float32 and `to`
 * the same dims in channel blocks of that width with no padding; else 0.
 */
int channel_block_of(const dnnl::memory::desc& from,
                     const dnnl::memory::desc& to);

/** Copies channels-last `from` into `to`, whose channel blocks are `block`
 * wide (channel_block_of's answer). */
void copy_into_channel_blocks(const dnnl::memory& from, const dnnl::memory& to,
                              int block);

}  // namespace tapeflow::cpu::onednn
