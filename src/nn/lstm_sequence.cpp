#include "nn/lstm_sequence.hpp"

#include <memory>
#include <tuple>

#include "autograd/node.hpp"
#include "autograd/saved.hpp"
#include "core/creation_internal.hpp"
#include "nn/lstm_cell_ops.hpp"
#include "ops/apply.hpp"
#include "tapeflow/autograd.hpp"
#include "tapeflow/nn/activations.hpp"
#include "tapeflow/ops/linalg.hpp"
#include "tapeflow/ops/math.hpp"
#include "tapeflow/ops/reduce.hpp"
#include "tapeflow/ops/shape.hpp"

namespace tapeflow::nn::detail {
namespace {

/** What the backward reads of each step, in walk order. */
struct Steps {
  std::vector<Tensor> h_prev, c_prev, i, f, g, o, tanh_c;
};

/** Row t of a (batch, time, n) tensor, as a (batch, n) view. */
Tensor at_time(const Tensor& x, int64_t t) {
  const Shape& s = x.shape();
  return squeeze(slice(x, {0, t, 0}, {s[0], 1, s[2]}), {1});
}

/** Gate k of z (batch, 4 units), as a view. */
Tensor gate(const Tensor& z, int64_t k, int64_t units) {
  return slice(z, {0, k * units}, {z.shape()[0], units});
}

int64_t time_index(int64_t step, int64_t time, bool go_backwards) {
  return go_backwards ? time - 1 - step : step;
}

/**
 * True when `like`'s device has a kernel for the fused cell op Cell and no
 * tape records (the cell ops have no gradient rule of their own).
 */
template <class Cell>
bool fused_cell(const Tensor& like) {
  return autograd::g_recording_tapes == 0 && find_kernel<Cell>(like.device());
}

/**
 * The walk (unrecorded): Keras' LSTM step, the ops of
 * LSTMCell::step_projected in its order, each step's gates kept in `steps`.
 */
std::vector<Tensor> walk(const Tensor& projected, const Tensor& h0,
                         const Tensor& c0, const Tensor& kernel,
                         bool go_backwards, bool return_sequences,
                         Steps& steps) {
  const int64_t time = projected.shape()[1], units = h0.shape()[1];
  Tensor h = h0, c = c0;
  std::vector<Tensor> outputs;
  for (int64_t s = 0; s < time; ++s) {
    const Tensor z = at_time(projected, time_index(s, time, go_backwards)) +
                     matmul(h, kernel);
    Tensor i, f, g, o, c_next, tanh_c, h_next;
    if (fused_cell<LstmCellForward>(z)) {
      std::tie(i, f, g, o, c_next, tanh_c, h_next) =
          std::tuple_cat(apply(LstmCellForward{}, {z, c}));
    } else {
      i = nn::sigmoid(gate(z, 0, units));
      f = nn::sigmoid(gate(z, 1, units));
      g = nn::tanh(gate(z, 2, units));
      o = nn::sigmoid(gate(z, 3, units));
      c_next = f * c + i * g;
      tanh_c = nn::tanh(c_next);
      h_next = o * tanh_c;
    }
    for (auto [list, t] : {std::pair{&steps.h_prev, h},
                           {&steps.c_prev, c},
                           {&steps.i, i},
                           {&steps.f, f},
                           {&steps.g, g},
                           {&steps.o, o},
                           {&steps.tanh_c, tanh_c}})
      list->push_back(t);
    h = h_next;
    c = c_next;
    if (return_sequences) outputs.push_back(h);
  }
  if (!return_sequences) return {h, c};
  return {stack(outputs, 1), h, c};
}

/**
 * The walk's gradient from the kept gates, given the outputs' gradients
 * (the custom op fills missing ones with zeros): per step back, dz from dh
 * and dc in closed form, dh = dz R^T, dc = dc f; then dR = sum_t h_{t-1}^T
 * dz_t as one product over (batch x time) rows.
 */
std::vector<Tensor> closed_form_gradient(const Steps& st, const Tensor& kernel,
                                         const Tensor& d_outputs, Tensor dh,
                                         Tensor dc,
                                         const Shape& projected_shape,
                                         bool go_backwards) {
  const int64_t time = projected_shape[1];
  std::vector<Tensor> dz(time), h_prev(time);
  const Tensor kernel_t = transpose(kernel);
  for (int64_t s = time - 1; s >= 0; --s) {
    if (d_outputs.defined()) dh = dh + at_time(d_outputs, s);
    const Tensor& i = st.i[s];
    const Tensor& f = st.f[s];
    const Tensor& g = st.g[s];
    const Tensor& o = st.o[s];
    const Tensor& tanh_c = st.tanh_c[s];
    const int64_t t = time_index(s, time, go_backwards);
    if (fused_cell<LstmCellBackward>(dh)) {
      std::tie(dz[t], dc) = std::tuple_cat(apply(
          LstmCellBackward{}, {i, f, g, o, st.c_prev[s], tanh_c, dh, dc}));
    } else {
      const Tensor dz_o = dh * tanh_c * o * (1.0 - o);
      dc = dc + dh * o * (1.0 - tanh_c * tanh_c);
      const Tensor dz_i = dc * g * i * (1.0 - i);
      const Tensor dz_f = dc * st.c_prev[s] * f * (1.0 - f);
      const Tensor dz_g = dc * i * (1.0 - g * g);
      dz[t] = concat({dz_i, dz_f, dz_g, dz_o}, 1);
      dc = dc * f;
    }
    h_prev[t] = st.h_prev[s];
    dh = matmul(dz[t], kernel_t);
  }
  const Tensor d_projected = stack(dz, 1);
  const int64_t rows = projected_shape[0] * time;
  const Tensor d_kernel =
      matmul(transpose(reshape(stack(h_prev, 1), {rows, kernel.shape()[0]})),
             reshape(d_projected, {rows, projected_shape[2]}));
  return {d_projected, dh, dc, d_kernel};
}

/**
 * Snapshots of h0, c0 and the recurrent kernel (handles of their own onto
 * the buffers, core/creation_internal.hpp), with their versions: a Variable
 * assigned after the forward then moves to a fresh buffer and the backward
 * reads the values the forward did, as a saved tensor of the op-by-op tape
 * would. They are not trainable: a tape that starts after the forward and
 * records the backward sees the kernel there as a constant (a partial second
 * order either way; a full one needs the outer tape recording the forward
 * too, which takes the op-by-op walk).
 */
struct ReadInputs {
  std::vector<Tensor> tensors;
  std::vector<autograd::SaveStamp> stamps;
};

}  // namespace

std::vector<Tensor> lstm_sequence(const Tensor& projected, const Tensor& h0,
                                  const Tensor& c0,
                                  const Tensor& recurrent_kernel,
                                  bool go_backwards, bool return_sequences) {
  // One recording tape: a gradient is wanted, and no outer tape records the
  // gradient computation (a second order differentiates the ops themselves).
  if (autograd::g_recording_tapes != 1 || projected.shape()[1] == 0) return {};
  for (const Tensor* t : {&h0, &c0, &recurrent_kernel})
    if (t->dtype() != projected.dtype() || t->device() != projected.device())
      return {};
  auto forward = [go_backwards,
                  return_sequences](const std::vector<Tensor>& in) {
    auto steps = std::make_shared<Steps>();
    const Tensor kernel = snapshot(in[3]);
    ReadInputs read{{snapshot(in[1]), snapshot(in[2]), kernel}, {}};
    for (const Tensor& t : read.tensors)
      read.stamps.push_back(autograd::stamp_of(t));
    CustomResult r;
    r.outputs = walk(in[0], read.tensors[0], read.tensors[1], kernel,
                     go_backwards, return_sequences, *steps);
    r.grad = [steps, read = std::move(read), shape = in[0].shape(),
              go_backwards,
              return_sequences](const std::vector<Tensor>& grads) {
      // A plain h0 or c0 written in place since the forward (a collective,
      // a host view) no longer holds what the steps were taken from: the
      // op-by-op tape refuses such a saved tensor, and so does this one.
      std::vector<Tensor> scratch;
      autograd::as_recorded("LSTM", "state or kernel", read.tensors,
                            read.stamps, scratch);
      const Tensor& kernel = read.tensors[2];
      // grads: (outputs,) h, c.
      const size_t h = return_sequences ? 1 : 0;
      return closed_form_gradient(*steps, kernel,
                                  return_sequences ? grads[0] : Tensor(),
                                  grads[h], grads[h + 1], shape, go_backwards);
    };
    return r;
  };
  return custom_gradient(forward, {projected, h0, c0, recurrent_kernel});
}

std::vector<Tensor> lstm_cell_step(const Tensor& z, const Tensor& c) {
  if (z.dtype() != c.dtype() || z.device() != c.device() ||
      !fused_cell<LstmCellForward>(z))
    return {};
  const auto out = apply(LstmCellForward{}, {z, c});
  return {out[6], out[4]};
}

}  // namespace tapeflow::nn::detail
