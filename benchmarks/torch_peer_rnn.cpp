// libtorch peer, part 5: lstm_train with torch::nn::LSTM (batch_first), the
// gradients of sum(h) w.r.t. its weights, as bench_rnn.cpp.
#include <torch/torch.h>

#include "bench_cases.hpp"

namespace tfbench::torch_peer {

void lstm_train(benchmark::State& state) {
  const LstmShape s = kLstm;
  torch::manual_seed(42);
  const torch::Tensor x = torch::rand({s.batch, s.time, s.features});
  torch::nn::LSTM lstm(
      torch::nn::LSTMOptions(s.features, s.units).batch_first(true));
  auto step = [&] {
    lstm->zero_grad();
    torch::Tensor loss = std::get<0>(lstm->forward(x)).sum();
    loss.backward();
    return loss;
  };
  if (time_steps(state, step, 0, "libtorch"))
    set_sequences_per_second(state, s.batch);
}

}  // namespace tfbench::torch_peer
