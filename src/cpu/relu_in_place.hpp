#pragma once
// relu over an output a kernel has just written, while it is still in cache:
// the fused ConvRelu's rectifier where the convolution itself cannot apply it
// (oneDNN's relu post-op turns NaN into 0, which the Relu op keeps).
#include <cstdint>

#include "tapeflow/core/tensor.hpp"

namespace tapeflow::cpu {

/** p[i] = p[i] <= 0 ? 0 : p[i] for i < n (NaN stays NaN), on this thread. */
void relu_in_place(float* p, int64_t n);

/** The same over contiguous float32 or float64 `t`, on the intra-op threads. */
void relu_in_place(const Tensor& t);

}  // namespace tapeflow::cpu
