#pragma once
// An LSTM layer's walk over time as one recorded op (custom_gradient), for
// Keras' default activations (sigmoid gates, tanh): the forward keeps each
// step's gates; the backward walks the steps back with the gates' derivatives
// in closed form and forms the recurrent kernel's gradient as one product
// over every step, sum_t h_{t-1}^T dz_t, where the op-by-op tape made a
// product and a 1 MiB add per step (256 units). It keeps what the op-by-op
// tape would (7 units per step and row) and reads a Variable's values as
// they were at the forward.
#include <vector>

#include "tapeflow/core/tensor.hpp"

namespace tapeflow::nn::detail {

/**
 * projected (batch, time, 4 units): the inputs' projections (x W + b), gate
 * order i, f, c, o; h0 and c0 (batch, units); recurrent_kernel (units,
 * 4 units). Returns {outputs (batch, time, units) in walk order (with
 * return_sequences only), the last h, the last c}; or nothing where the
 * walk must go op by op: no tape records (nothing to keep), or more than
 * one does (an outer tape records the gradient computation for a second
 * order), no time steps, or operands of other dtypes or devices.
 */
std::vector<Tensor> lstm_sequence(const Tensor& projected, const Tensor& h0,
                                  const Tensor& c0,
                                  const Tensor& recurrent_kernel,
                                  bool go_backwards, bool return_sequences);

/**
 * One step's pointwise part with Keras' default activations, from z = x W +
 * h R + b (batch, 4 units) and c, through the fused cell op that the fused
 * walk takes (so that a layer gives the same values with a tape recording
 * and without): {h', c'}; or nothing where a tape records, z and c differ in
 * dtype or device, or the device has no kernel for the cell.
 */
std::vector<Tensor> lstm_cell_step(const Tensor& z, const Tensor& c);

}  // namespace tapeflow::nn::detail
