#pragma once
// Recurrent cells (Keras' SimpleRNNCell, LSTMCell, GRUCell): one time step,
// for hand-written loops; the layers in recurrent.hpp run them over time.
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "tapeflow/nn/activations.hpp"
#include "tapeflow/nn/initializers.hpp"
#include "tapeflow/nn/layers/dense.hpp"
#include "tapeflow/nn/module.hpp"

namespace tapeflow::nn {

/** Options of the recurrent cells and layers, named and ordered as Keras'. */
struct RNNOptions {
  bool return_sequences = false;  // layer: every step's output, else the last
  bool return_state = false;      // layer: RNNResult::states is filled
  bool go_backwards =
      false;  // layer: walk time reversed (outputs in walk order)
  Activation activation = nn::tanh;
  Activation recurrent_activation = nn::sigmoid;  // LSTM and GRU gates
  bool use_bias = true;
  bool reset_after = true;       // GRU: reset gate after the recurrent matmul
  bool unit_forget_bias = true;  // LSTM: the forget gate's bias starts at 1
  double dropout = 0.0;  // on the inputs, one mask for every step (training)
  double recurrent_dropout = 0.0;  // on the carried h, one mask for every step
  bool zero_output_for_mask = false;  // masked steps output 0, not the last h
  Initializer kernel_initializer = glorot_uniform();
  Initializer recurrent_initializer = orthogonal();
  Initializer bias_initializer = zeros_initializer();
  std::optional<uint64_t> seed = {};  // dropout masks (global stream if none)
  DType dtype = float32;              // of the weights
  std::string name = "";
};

/**
 * One step of a recurrence. Its kernel maps the input to `gates` × units
 * pre-activations at once (LSTM: i, f, c, o; GRU: z, r, h), so a layer
 * projects a whole sequence with one matmul and each step adds one
 * recurrent matmul.
 */
class RecurrentCell : public Module {
 public:
  int64_t units() const { return units_; }
  /** How many tensors the cell carries from step to step (LSTM: h and c). */
  virtual size_t state_count() const { return 1; }

  /** x_t (batch, in) and the states -> the new states; [0] is the output h. */
  std::vector<Tensor> step(const Tensor& x_t,
                           const std::vector<Tensor>& states);
  /** One step from zero states: h. */
  Tensor forward(const Tensor& x_t) override;

  /** Zero states for `batch` rows, in the weights' dtype, on `device`. */
  std::vector<Tensor> zero_states(int64_t batch, Device device) const;
  /** Forgets the dropout masks: the next step draws new ones (a new sequence).
   */
  void reset_dropout_masks();

  /** x (..., in) -> dropout(x) W + b, (..., gates × units): every step at once.
   */
  Tensor project_inputs(const Tensor& x);
  /** One step from a row of project_inputs(). */
  virtual std::vector<Tensor> step_projected(
      const Tensor& projected_t, const std::vector<Tensor>& states) = 0;
  /**
   * Every step of project_inputs() (batch, time, gates × units) at once,
   * where the cell has a fused walk for its options: {the outputs
   * (batch, time, units) in walk order (with return_sequences only), the
   * last states...}; empty where the layer must step one at a time. The
   * values are step_projected's, to the bit.
   */
  virtual std::vector<Tensor> walk_projected(const Tensor& projected,
                                             const std::vector<Tensor>& states,
                                             bool go_backwards,
                                             bool return_sequences);

  const Variable& kernel() const { return kernel_; }
  const Variable& recurrent_kernel() const { return recurrent_kernel_; }
  const Variable& bias() const { return bias_; }
  const RNNOptions& options() const { return options_; }

 protected:
  RecurrentCell(std::string type, int64_t units, int64_t gates,
                RNNOptions options);
  void build(const Shape& input_shape) override;
  /** The bias's initial value (LSTM: unit_forget_bias; GRU: two rows). */
  virtual Tensor initial_bias(int64_t in);
  /** The input bias added to project_inputs (GRU reset_after: row 0). */
  virtual Tensor input_bias() const { return bias_; }
  /** h with the recurrent dropout mask applied (training only). */
  Tensor dropped_state(const Tensor& h);
  /** state_count() states of shape (batch, units), or the error. */
  void check_states(const std::vector<Tensor>& states, int64_t batch) const;
  /**
   * A built cell and project_inputs() output of `rank` (a step's: 2, a
   * sequence's: 3) ending in gates × units, or the error.
   */
  void check_projected(const Tensor& projected, int64_t rank) const;

  int64_t gates_;
  RNNOptions options_;
  Variable kernel_, recurrent_kernel_, bias_;

 private:
  Tensor mask_for(std::optional<Tensor>& mask, const Tensor& like, double rate);
  int64_t units_;
  std::optional<Tensor> input_mask_, recurrent_mask_;
};

/** h = activation(x W + h R + b). */
class SimpleRNNCell : public RecurrentCell {
 public:
  explicit SimpleRNNCell(int64_t units, RNNOptions options = {});
  std::vector<Tensor> step_projected(
      const Tensor& projected_t, const std::vector<Tensor>& states) override;
};

/** The new (h, c) of an LSTM step. */
struct LSTMState {
  Tensor h, c;
};

/**
 * Keras' LSTMCell, gate order i, f, c, o: kernel (in, 4u), recurrent_kernel
 * (u, 4u), bias (4u). c' = f c + i act(z_c), h' = o act(c').
 */
class LSTMCell : public RecurrentCell {
 public:
  explicit LSTMCell(int64_t units, RNNOptions options = {});
  /** One step: `auto [h, c] = cell(x_t, {h_prev, c_prev})`. */
  LSTMState operator()(const Tensor& x_t, const LSTMState& state);
  using RecurrentCell::operator();
  size_t state_count() const override { return 2; }
  std::vector<Tensor> step_projected(
      const Tensor& projected_t, const std::vector<Tensor>& states) override;
  /**
   * With Keras' default activations (sigmoid gates, tanh), no recurrent
   * dropout and one tape recording (a first-order gradient): one recorded
   * op whose gradient forms the recurrent kernel's from one product over
   * all steps.
   */
  std::vector<Tensor> walk_projected(const Tensor& projected,
                                     const std::vector<Tensor>& states,
                                     bool go_backwards,
                                     bool return_sequences) override;

 protected:
  Tensor initial_bias(int64_t in) override;
};

/**
 * Keras' GRUCell, gate order z, r, h; h' = z h + (1 - z) hh. reset_after
 * (Keras 2+, cuDNN): hh = act(x W_h + r (h R_h + b_rh)) with bias (2, 3u);
 * otherwise hh = act(x W_h + (r h) R_h + b_h) with bias (3u).
 */
class GRUCell : public RecurrentCell {
 public:
  explicit GRUCell(int64_t units, RNNOptions options = {});
  /** One step: the new h. */
  Tensor operator()(const Tensor& x_t, const Tensor& h);
  using RecurrentCell::operator();
  std::vector<Tensor> step_projected(
      const Tensor& projected_t, const std::vector<Tensor>& states) override;

 protected:
  Tensor initial_bias(int64_t in) override;
  Tensor input_bias() const override;
};

}  // namespace tapeflow::nn
