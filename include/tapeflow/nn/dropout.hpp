#pragma once
// Dropout (tpf::nn).
#include <cstdint>
#include <optional>

#include "tapeflow/core/shape.hpp"
#include "tapeflow/core/tensor.hpp"

namespace tapeflow::nn {

/**
 * Keeps each element with probability 1 - rate and scales kept ones by
 * 1 / (1 - rate) (TensorFlow's semantics); rate in [0, 1). `noise_shape`
 * (empty = x's shape) must broadcast to x's shape: one draw per position of
 * it. With a `seed` the mask depends only on (seed, shape); without one it
 * takes the next numbers of the global stream (manual_seed). training=false
 * returns x.
 */
Tensor dropout(const Tensor& x, double rate, bool training = true,
               const Shape& noise_shape = {},
               std::optional<uint64_t> seed = {});

}  // namespace tapeflow::nn
