#pragma once
// The pointwise part of one LSTM step as two fused ops, which the fused LSTM
// walk (nn/lstm_sequence.cpp) takes on a device that has kernels for them,
// in place of the ~12 ops of a step forward and ~20 of its gradient. They
// are not differentiable: the walk's custom gradient is their gradient, and
// a walk that a tape records takes the op-by-op path.
#include <array>
#include <initializer_list>

#include "core/op_error.hpp"
#include "ops/op.hpp"

namespace tapeflow {

/**
 * ValueError, DTypeError or ShapeError unless there is one input per width,
 * each floating, of in[0]'s dtype and of shape (rows, width * units).
 */
inline void check_cell_operands(const char* op, Inputs in, int64_t units,
                                std::initializer_list<int64_t> widths) {
  if (in.size() != widths.size())
    throw op_error<ValueError>(op, "expected ", widths.size(),
                               " operands, got ", in.size());
  const int64_t rows = in[0].shape().empty() ? 0 : in[0].shape()[0];
  size_t k = 0;
  for (const int64_t width : widths) {
    const Tensor& t = in[k++];
    if (!is_floating(t.dtype()) || t.dtype() != in[0].dtype())
      throw op_error<DTypeError>(op, "expected operand ", k - 1, " of dtype ",
                                 dtype_name(in[0].dtype()),
                                 " (float32 or float64), got ",
                                 dtype_name(t.dtype()));
    const Shape want{rows, width * units};
    if (!(t.shape() == want))
      throw op_error<ShapeError>(op, "expected operand ", k - 1, " of shape ",
                                 want.str(), ", got ", t.shape().str());
  }
}

/**
 * From z = x W + h R + b (rows, 4 units: the pre-activations of the gates
 * i, f, g, o) and c: i, f, g, o, c' = f c + i g, tanh(c') and h' = o tanh(c'),
 * each (rows, units). Inputs {z, c}.
 */
struct LstmCellForward {
  static constexpr const char* name = "lstm_cell_forward";
  std::array<TensorSpec, 7> infer(Inputs in) const {
    const int64_t units =
        in.size() == 2 && in[1].rank() == 2 ? in[1].shape()[1] : 0;
    check_cell_operands(name, in, units, {4, 1});
    const TensorSpec s{in[1].shape(), in[1].dtype()};
    return {s, s, s, s, s, s, s};
  }
};

/**
 * The step's gradient from its gates: with dc_total = dc' + dh' o (1 -
 * tanh(c')^2), dz (rows, 4 units) = (dc_total g i (1 - i), dc_total c f
 * (1 - f), dc_total i (1 - g^2), dh' tanh(c') o (1 - o)) and dc = dc_total f.
 * Inputs {i, f, g, o, c, tanh(c'), dh', dc'}.
 */
struct LstmCellBackward {
  static constexpr const char* name = "lstm_cell_backward";
  std::array<TensorSpec, 2> infer(Inputs in) const {
    const int64_t units =
        !in.empty() && in[0].rank() == 2 ? in[0].shape()[1] : 0;
    check_cell_operands(name, in, units, {1, 1, 1, 1, 1, 1, 1, 1});
    const Shape& s = in[0].shape();
    return {TensorSpec{Shape{s[0], 4 * s[1]}, in[0].dtype()},
            TensorSpec{s, in[0].dtype()}};
  }
};

}  // namespace tapeflow
