// The operand type of float32 convolutions and matmuls under
// config::float32_matmul_precision.
#pragma once

#include <dnnl.hpp>

#include "tapeflow/config.hpp"

namespace tapeflow::cpu {

/**
 * True when float32 convolutions and matmuls should multiply bfloat16
 * operands: precision `medium` on a CPU with native bfloat16 dot products.
 * oneDNN's bfloat16 emulation on older AVX-512 is slower than float32, so
 * there `medium` stays float32, as PyTorch's does.
 */
inline bool multiply_in_bf16() {
  if (config::float32_matmul_precision() != config::Float32Precision::medium)
    return false;
  static const bool native = [] {
    const auto isa = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
    return (isa & dnnl_cpu_isa_avx512_core_bf16) ==
           dnnl_cpu_isa_avx512_core_bf16;
  }();
  return native;
}

inline dnnl::memory::data_type operand_type(bool bf16) {
  return bf16 ? dnnl::memory::data_type::bf16 : dnnl::memory::data_type::f32;
}

}  // namespace tapeflow::cpu
