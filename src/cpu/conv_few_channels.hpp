#pragma once
// The forward and the filter gradient of float32 2-d convolutions whose
// input has one or two channels (grayscale first layers) at stride 1, over
// plain NCHW, in xsimd batches along the output rows (conv_few_channels.cpp).
// oneDNN's forward writes its blocked layout, and the reorder to NCHW costs
// a third of the convolution; for the filter gradient its blocked kernel pads
// the channels to 8 (AVX2) or 16, and its GEMM kernel on plain layouts runs
// on one thread.
#include "ops/nn/conv_ops.hpp"

namespace tapeflow::cpu {

/**
 * True when few_channels_conv_grad_filter takes a float32 convolution of x
 * (N, C, H, W) by a filter (O, C, KH, KW) with attributes `a`.
 */
bool few_channels_conv_applies(const ConvAttrs& a, const Shape& x,
                               const Shape& filter);

/** True when few_channels_conv_forward takes conv(x, filter) in float32. */
bool few_channels_conv_forward_applies(const ConvAttrs& a, const Shape& x,
                                       const Shape& filter);

/**
 * y = conv(x, w) [+ bias] written straight into y's NCHW planes, through
 * relu (NaN kept) when `relu`; contiguous operands, `bias` (O,) or
 * undefined. Each output element is summed by one thread in the filter's
 * order: the result does not depend on the thread count.
 */
void few_channels_conv_forward(const ConvAttrs& a, const Tensor& x,
                               const Tensor& w, const Tensor& bias, Tensor& y,
                               bool relu);

/**
 * dw of conv(x, w) given dy; contiguous operands. Each output channel is
 * summed by one thread in a fixed order: the result does not depend on the
 * thread count.
 */
void few_channels_conv_grad_filter(const ConvAttrs& a, const Tensor& x,
                                   const Tensor& dy, Tensor& dw);

}  // namespace tapeflow::cpu
