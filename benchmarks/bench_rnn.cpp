// lstm_train of tapeflow: nn::LSTM forward on a fresh tape and the gradients
// of sum(h) w.r.t. its weights, on a fixed random batch.
#include "bench_cases.hpp"
#include "tapeflow/tapeflow.hpp"

namespace tpf = tapeflow;

namespace tfbench {

void tf_lstm_train(benchmark::State& state) {
  const LstmShape s = kLstm;
  tpf::manual_seed(42);
  const tpf::Tensor x = tpf::random_uniform({s.batch, s.time, s.features});
  tpf::nn::LSTM lstm(s.units, {.return_sequences = true});
  const auto params = lstm.parameters();
  auto step = [&] {
    tpf::GradientTape tape;
    const tpf::Tensor loss = tpf::sum(lstm(x));
    const auto grads = tape.gradient(loss, params);
    benchmark::DoNotOptimize(grads);
    return loss;
  };
  if (time_steps(state, step, 0, "tapeflow"))
    set_sequences_per_second(state, s.batch);
}

}  // namespace tfbench
