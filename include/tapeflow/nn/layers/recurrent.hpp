#pragma once
// Recurrent layers (Keras' SimpleRNN, LSTM, GRU, Bidirectional): a cell run
// over the time axis of (batch, time, features) inputs, with masks of padded
// steps, initial states, and gradients through time on the tape.
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "tapeflow/nn/layers/recurrent_cells.hpp"

namespace tapeflow::nn {

/** What a recurrent layer's call() takes besides the inputs. */
struct RNNCall {
  /** (batch, time): false or 0 marks a padded step (states carried over). */
  Tensor mask = {};
  /** The cell's states at the first step (zeros when empty). */
  std::vector<Tensor> initial_state = {};
};

/** A recurrent layer's output and, with return_state, its final states. */
struct RNNResult {
  Tensor output;  // (batch, time, units) with return_sequences, else (batch,
                  // units)
  std::vector<Tensor> states;  // LSTM: h, c; others: h
};

/** A cell over time (Keras' RNN layer). */
class RNN : public Module {
 public:
  RNN(std::shared_ptr<RecurrentCell> cell, std::string type = "rnn",
      std::string name = "");
  RNNResult call(const Tensor& x, const RNNCall& args = {});
  Tensor forward(const Tensor& x) override { return call(x).output; }
  Tensor forward_masked(const Tensor& x, const Tensor& mask) override {
    return call(x, {.mask = mask}).output;
  }
  /** The mask goes on with the steps when every step is returned. */
  Tensor output_mask(const Tensor& x, const Tensor& mask) const override;

  /** The cell (a ValueError on a moved-from layer, as calling it is). */
  RecurrentCell& cell() const;
  const RNNOptions& options() const { return cell().options(); }
  /** A new, unbuilt layer like this one walking time the other way. */
  virtual std::shared_ptr<RNN> reversed() const;

 protected:
  void build(const Shape& input_shape) override;

 private:
  std::vector<Tensor> first_states(const Tensor& x, const RNNCall& args) const;
  std::shared_ptr<RecurrentCell> cell_;
};

/** h_t = activation(x_t W + h_{t-1} R + b) over time. */
class SimpleRNN : public RNN {
 public:
  explicit SimpleRNN(int64_t units, RNNOptions options = {});
  std::shared_ptr<RNN> reversed() const override;
};

/** LSTMCell over time; weights "lstm/lstm_cell/kernel" etc., as Keras. */
class LSTM : public RNN {
 public:
  explicit LSTM(int64_t units, RNNOptions options = {});
  std::shared_ptr<RNN> reversed() const override;
};

/** GRUCell over time (reset_after as Keras 2+ by default). */
class GRU : public RNN {
 public:
  explicit GRU(int64_t units, RNNOptions options = {});
  std::shared_ptr<RNN> reversed() const override;
};

struct BidirectionalOptions {
  std::string merge_mode = "concat";  // or "sum", "mul", "ave"
  std::string name = "";
};

/**
 * A layer and its time-reversed twin (fresh weights) on the same inputs,
 * outputs merged; the backward sequence is put back in time order (Keras).
 * Weights: "bidirectional/forward_lstm/...", ".../backward_lstm/...".
 */
class Bidirectional : public Module {
 public:
  template <class Layer>
  requires std::is_base_of_v<RNN, Layer>
  explicit Bidirectional(Layer layer, BidirectionalOptions options = {})
      : Bidirectional(std::make_shared<Layer>(std::move(layer)),
                      std::move(options)) {}
  Bidirectional(std::shared_ptr<RNN> layer, BidirectionalOptions options);

  /** states: the forward layer's, then the backward layer's. */
  RNNResult call(const Tensor& x, const RNNCall& args = {});
  Tensor forward(const Tensor& x) override { return call(x).output; }
  Tensor forward_masked(const Tensor& x, const Tensor& mask) override {
    return call(x, {.mask = mask}).output;
  }
  Tensor output_mask(const Tensor& x, const Tensor& mask) const override;

  RNN& forward_layer() const;
  RNN& backward_layer() const;

 private:
  Tensor merge(const Tensor& a, const Tensor& b) const;
  std::shared_ptr<RNN> forward_, backward_;
  BidirectionalOptions options_;
};

}  // namespace tapeflow::nn
