#pragma once
// float64 convolutions by direct loops (oneDNN has no f64): exact references
// that float64 gradcheck runs on. Contiguous channels-first operands.
#include "ops/nn/conv_ops.hpp"

namespace tapeflow::cpu {

void conv_direct_forward(const ConvAttrs& a, const Tensor& x, const Tensor& w,
                         Tensor& y);
void conv_direct_grad_input(const ConvAttrs& a, const Tensor& dy,
                            const Tensor& w, Tensor& dx);
void conv_direct_grad_filter(const ConvAttrs& a, const Tensor& x,
                             const Tensor& dy, Tensor& dw);

}  // namespace tapeflow::cpu
