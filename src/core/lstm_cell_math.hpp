#pragma once
// The pointwise LSTM step of the fused cell ops (nn/lstm_cell_ops.hpp) as
// templates over the value type: xsimd batches and scalars on the CPU
// (cpu/lstm_cell.cpp), float and double on the GPU (cuda/lstm_cell.cu),
// each with its device's sigmoid and tanh, so that both backends compute
// the same formulas in the same order.
#include "core/host_device.hpp"

namespace tapeflow {

/** One step's gates i, f, g, o, c' = f c + i g, tanh(c') and h' = o tanh(c').
 */
template <class V>
struct LstmCellForwardValues {
  V i, f, g, o, c_next, tanh_c, h;
};

/** From the gates' pre-activations z_i, z_f, z_g, z_o and the state c. */
template <class V, class Sigmoid, class Tanh>
TPF_HOST_DEVICE LstmCellForwardValues<V> lstm_cell_forward_values(
    const V& zi, const V& zf, const V& zg, const V& zo, const V& c,
    const Sigmoid& sigmoid, const Tanh& tanh_of) {
  const V i = sigmoid(zi), f = sigmoid(zf), g = tanh_of(zg), o = sigmoid(zo);
  const V c_next = f * c + i * g;
  const V tanh_c = tanh_of(c_next);
  return {i, f, g, o, c_next, tanh_c, o * tanh_c};
}

/** The step's gradient: dz by gate, and dc for the step before. */
template <class V>
struct LstmCellBackwardValues {
  V dz_i, dz_f, dz_g, dz_o, dc_prev;
};

/**
 * From the gates, c, tanh(c') and the gradients dh' and dc' that reach the
 * step: with dc_total = dc' + dh' o (1 - tanh(c')^2), dz = (dc_total g i
 * (1 - i), dc_total c f (1 - f), dc_total i (1 - g^2), dh' tanh(c') o
 * (1 - o)) and dc = dc_total f.
 */
template <class V>
TPF_HOST_DEVICE LstmCellBackwardValues<V> lstm_cell_backward_values(
    const V& i, const V& f, const V& g, const V& o, const V& c, const V& tanh_c,
    const V& dh, const V& dc_next) {
  const V one(1);
  const V dc = dc_next + dh * o * (one - tanh_c * tanh_c);
  return {dc * g * i * (one - i), dc * c * f * (one - f),
          dc * i * (one - g * g), dh * tanh_c * o * (one - o), dc * f};
}

}  // namespace tapeflow
