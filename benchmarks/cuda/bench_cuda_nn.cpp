// The CPU suite's nn cases on cuda:0 (CUDA.md §7 "NN"): conv2d a, b and c
// (bench_cases.hpp's reference shapes) forward and train, max_pool2d 2×2 on
// both pool shapes, batch norm on 64×64×56² and lstm_train, float32 with
// products in float32 (precision "highest"). "train" is the forward and the
// gradients of every input on a fresh tape, seeded with a fixed dy, as on
// the CPU. Each iteration ends in tpf::synchronize. Their peer is
// tools/gpu_peer_nn.py (PyTorch, cuDNN, TF32 off).
#include <vector>

#include "../bench_cases.hpp"
#include "bench_cuda.hpp"

namespace tpf = tapeflow;

namespace tapeflow_bench_cuda {
namespace {

using tfbench::ConvShape;
using tfbench::PoolShape;

tpf::Tensor uniform(const tpf::Shape& shape) {
  return tpf::random_uniform(shape, -1.0, 1.0, tpf::float32, gpu0);
}

/** fwd() per iteration, or fwd() and the gradients of `sources` given dy. */
template <class Fwd>
void run(benchmark::State& state, bool train,
         const std::vector<tpf::Tensor>& sources, const tpf::Tensor& dy,
         Fwd fwd) {
  using tpf::config::Float32Precision;
  const Float32Precision previous = tpf::config::float32_matmul_precision();
  tpf::config::set_float32_matmul_precision(Float32Precision::highest);
  const auto step = [&] {
    if (!train) {
      benchmark::DoNotOptimize(fwd());
    } else {
      tpf::GradientTape tape;
      for (const tpf::Tensor& s : sources) tape.watch(s);
      const tpf::Tensor y = fwd();
      benchmark::DoNotOptimize(tape.gradient(y, sources, {dy}));
    }
    tpf::synchronize(gpu0);
  };
  try {
    step();  // warm-up: the arena and cuBLAS
    for (auto _ : state) step();
  } catch (const tpf::Error& e) {
    state.SkipWithError(e.what());
  }
  tpf::config::set_float32_matmul_precision(previous);
}

void conv2d(benchmark::State& state, ConvShape s, bool train) {
  tpf::manual_seed(42);
  const tpf::Tensor x = uniform({s.n, s.c, s.hw, s.hw});
  const tpf::Tensor w = uniform({s.o, s.c, s.k, s.k});
  const int64_t out = s.hw + 2 * s.pad - s.k + 1;
  const tpf::Tensor dy = uniform({s.n, s.o, out, out});
  const tpf::nn::ConvOptions o{.padding = {s.pad, s.pad, s.pad, s.pad}};
  run(state, train, {x, w}, dy, [&] { return tpf::nn::conv2d(x, w, o); });
  tfbench::set_conv_flops(state, s, train);
}

void max_pool2d(benchmark::State& state, PoolShape s) {
  tpf::manual_seed(42);
  const auto* d = s.dims;
  const tpf::Tensor x = uniform({d[0], d[1], d[2], d[3]});
  const tpf::Tensor dy = uniform({d[0], d[1], d[2] / 2, d[3] / 2});
  const tpf::nn::PoolOptions o{.ksize = {2, 2}, .strides = {2, 2}};
  run(state, true, {x}, dy, [&] { return tpf::nn::max_pool2d(x, o); });
}

void batch_norm(benchmark::State& state) {
  tpf::manual_seed(42);
  const auto* d = tfbench::kBnShape;
  const tpf::Tensor x = uniform({d[0], d[1], d[2], d[3]});
  const tpf::Tensor dy = uniform({d[0], d[1], d[2], d[3]});
  const tpf::Tensor scale = uniform({d[1]}), offset = uniform({d[1]});
  run(state, true, {x, scale, offset}, dy, [&] {
    return tpf::nn::fused_batch_norm(x, scale, offset, tfbench::kBnEps, true).y;
  });
}

/**
 * lstm_train (bench_cases.hpp's shape): an LSTM layer's forward on a fresh
 * tape and the gradients of sum(h) w.r.t. its weights, as on the CPU.
 */
void lstm_train(benchmark::State& state) {
  const tfbench::LstmShape s = tfbench::kLstm;
  tpf::manual_seed(42);
  const tpf::Tensor x = uniform({s.batch, s.time, s.features});
  tpf::nn::LSTM lstm(s.units, {.return_sequences = true});
  (void)lstm(x);  // builds the weights on cuda:0
  const auto params = lstm.parameters();
  // run's forward-only mode: the step records and differentiates itself
  // (eagerly: every gradient is computed, the first is returned).
  run(state, false, {}, {}, [&] {
    tpf::GradientTape tape;
    const tpf::Tensor loss = tpf::sum(lstm(x));
    return tape.gradient(loss, params).front();
  });
  tfbench::set_sequences_per_second(state, s.batch);
}

}  // namespace

void register_nn_cases() {
  using benchmark::kMicrosecond;
  for (const ConvShape& s : tfbench::kConvShapes)
    for (const bool train : {false, true})
      reg(std::string("conv2d_") + s.name + (train ? "_train" : "_fwd") +
              "/tapeflow",
          kMicrosecond, conv2d, s, train);
  for (const PoolShape& s : tfbench::kPoolShapes)
    reg(std::string("max_pool2d") + s.name + "_train/tapeflow", kMicrosecond,
        max_pool2d, s);
  reg("batch_norm_train/tapeflow", kMicrosecond, batch_norm);
  reg("lstm_train/tapeflow", kMicrosecond, lstm_train);
}

}  // namespace tapeflow_bench_cuda
