// Model parallelism in one process, as the seeds' LSTM unrolled across four
// GPUs: a stack of LSTMCells, layer d on device d, unrolled over time by
// hand. Each step's h moves to the next layer's device with Tensor::to, which
// the tape records, so gradients flow back across devices. With fewer GPUs
// than layers the remaining layers run on the CPU (all of them here without
// a GPU). The task: predict the next value of sums of two sines with random
// frequencies and phases. TAPEFLOW_LOG_PLACEMENT=1 logs each op's device.
#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <tapeflow/tapeflow.hpp>
#include <vector>

#include "common/cli.hpp"
#include "common/progress.hpp"

namespace tpf = tapeflow;
namespace nn = tapeflow::nn;
using tpf::Tensor;

namespace {

struct Options {
  int layers = 4;
  int64_t units = 64;
  int64_t time = 24;
  int64_t batch = 32;
  int64_t iterations = 300;
  double learning_rate = 0.01;
  uint64_t seed = 1;
  double max_ratio = 0.5;
  int threads = 0;
};

/** Layer d's device: GPU d while there are GPUs, then the CPU. */
tpf::Device device_of_layer(int d) {
  const int gpus = tpf::device_count(tpf::DeviceType::cuda);
  return d < gpus ? tpf::Device::cuda(d) : tpf::Device::cpu();
}

/** (batch, time + 1) samples of sin(a t + p) + sin(b t + q) / 2. */
Tensor waves(int64_t batch, int64_t time) {
  const Tensor t = tpf::reshape(tpf::arange(0.0f, static_cast<float>(time + 1)),
                                {1, time + 1});
  const auto draw = [&](double lo, double hi) {
    return tpf::random_uniform({batch, 1}, lo, hi);
  };
  return (tpf::sin(draw(0.1, 0.6) * t + draw(0, 6.3)) +
          tpf::sin(draw(0.1, 0.6) * t + draw(0, 6.3))) *
         0.5;
}

/** The stack: one cell per layer, each built inside its device's scope. */
struct Stack {
  std::vector<std::unique_ptr<nn::LSTMCell>> cells;
  std::vector<tpf::Device> devices;
  std::unique_ptr<nn::Dense> head;  // on the last layer's device

  Stack(int layers, int64_t units) {
    for (int d = 0; d < layers; ++d) {
      devices.push_back(device_of_layer(d));
      tpf::DeviceScope scope(devices.back());
      cells.push_back(std::make_unique<nn::LSTMCell>(
          units, nn::RNNOptions{.name = "lstm_cell_" + std::to_string(d)}));
      cells.back()->build_for({1, d == 0 ? 1 : units}, devices.back());
    }
    tpf::DeviceScope scope(devices.back());
    head = std::make_unique<nn::Dense>(1, nn::DenseOptions{.input_dim = units});
  }

  std::vector<tpf::Variable> parameters() const {
    std::vector<tpf::Variable> all;
    for (const auto& c : cells)
      for (const auto& v : c->parameters()) all.push_back(v);
    for (const auto& v : head->parameters()) all.push_back(v);
    return all;
  }

  /**
   * The seeds' loop: for every step, up through the layers, each on its own
   * device. Returns the predictions (batch, time) on the last device.
   */
  Tensor unroll(const Tensor& inputs) {
    const int64_t batch = inputs.dim(0), time = inputs.dim(1);
    std::vector<nn::LSTMState> states;
    for (size_t d = 0; d < cells.size(); ++d) {
      tpf::DeviceScope scope(devices[d]);
      states.push_back({tpf::zeros({batch, cells[d]->units()}),
                        tpf::zeros({batch, cells[d]->units()})});
    }
    std::vector<Tensor> predictions;
    const auto steps = tpf::unstack(tpf::expand_dims(inputs, 2), 1);
    for (int64_t t = 0; t < time; ++t) {
      Tensor h = steps[t];
      for (size_t d = 0; d < cells.size(); ++d) {
        states[d] = (*cells[d])(h.to(devices[d]), states[d]);
        h = states[d].h;
      }
      predictions.push_back((*head)(h));
    }
    return tpf::reshape(tpf::stack(predictions, 1), {batch, time});
  }
};

int run(const Options& o) {
  tpf::manual_seed(o.seed);
  Stack stack(o.layers, o.units);
  for (size_t d = 0; d < stack.cells.size(); ++d)
    std::printf("layer %zu: LSTMCell(%lld) on %s\n", d,
                static_cast<long long>(o.units),
                stack.cells[d]->kernel().device().str().c_str());
  std::printf("head: Dense(1) on %s\n",
              stack.head->kernel().device().str().c_str());

  tpf::optim::Adam adam({.learning_rate = o.learning_rate});
  const auto params = stack.parameters();
  samples::Progress progress("train", o.iterations, o.batch);
  for (int64_t i = 1; i <= o.iterations; ++i) {
    const Tensor series = waves(o.batch, o.time);
    const Tensor inputs = tpf::slice(series, {0, 0}, {o.batch, o.time});
    const Tensor targets = tpf::slice(series, {0, 1}, {o.batch, o.time});
    const double loss =
        adam.minimize(
                [&] {
                  const Tensor predicted = stack.unroll(inputs);
                  return tpf::mean(nn::mean_squared_error(
                      targets.to(predicted.device()), predicted));
                },
                params)
            .item<double>();
    progress.update(i, loss);
  }
  progress.finish();
  // Against the naive forecast (the next value is the current one).
  const Tensor series = waves(256, o.time);
  const Tensor inputs = tpf::slice(series, {0, 0}, {256, o.time});
  const Tensor targets = tpf::slice(series, {0, 1}, {256, o.time});
  const Tensor predicted = stack.unroll(inputs);
  const auto mse = [](const Tensor& a, const Tensor& b) {
    return tpf::mean(tpf::square(a - b)).item<double>();
  };
  const double held_out = mse(targets.to(predicted.device()), predicted);
  const double naive = mse(targets, inputs);
  std::printf(
      "held-out mean squared error %.5f; the naive forecast's %.5f (%.1fx)\n",
      held_out, naive, naive / held_out);
  if (!(held_out < o.max_ratio * naive)) {
    std::fprintf(stderr,
                 "self-check failed: held-out error %.5f is not below %.2f "
                 "of the naive forecast's %.5f\n",
                 held_out, o.max_ratio, naive);
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "An LSTM stack with layer d on device d, unrolled over time by hand "
      "(model parallelism in one process)"};
  Options o;
  app.add_option("--layers", o.layers, "LSTM layers (one device each)")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  app.add_option("--units", o.units, "units per layer")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--time", o.time, "time steps unrolled")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--batch", o.batch, "sequences per step")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--iterations", o.iterations, "training steps")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--learning-rate", o.learning_rate, "Adam's learning rate")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--seed", o.seed, "seed of weights and data")
      ->capture_default_str();
  app.add_option("--max-ratio", o.max_ratio,
                 "self-check: the held-out error must end below this share "
                 "of the naive forecast's")
      ->capture_default_str();
  samples::add_threads_option(app, o.threads);
  CLI11_PARSE(app, argc, argv);
  return samples::run_sample(o.threads, [&] { return run(o); });
}
