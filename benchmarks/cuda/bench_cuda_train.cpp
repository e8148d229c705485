// train_step_cnn on the GPU: one full training step of the Fashion-MNIST CNN
// (samples/common/models.hpp, the CPU suite's train_step_cnn in
// benchmarks/bench_train.cpp) at batch 64 and 512 on cuda:0: forward on a
// fresh tape, the gradient of every parameter, Adam 1e-3, float32 products
// (precision "highest", tapeflow's default). Each step ends in a
// synchronization, as the sample's per-step loss read does. Its peer is
// tools/gpu_peer_cnn.py (PyTorch, same model, optimizer and batches, TF32 off).
//
// TAPEFLOW_BENCH_PROFILE=1 also prints the profiler's per-op table of a few
// more steps to stderr; under CUDA_LAUNCH_BLOCKING=1 each op's host time
// includes its kernels, so the table says where the GPU step goes.
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "bench_cuda.hpp"
#include "common/models.hpp"
#include "tapeflow/profiler.hpp"

namespace tpf = tapeflow;
namespace nn = tapeflow::nn;

namespace tapeflow_bench_cuda {
namespace {

/** Steps before timing: weights, Adam's slots, the arena and cuBLAS warm. */
constexpr int kWarmupSteps = 5;
/** Steps in the TAPEFLOW_BENCH_PROFILE table. */
constexpr int kProfiledSteps = 10;

bool profile_requested() {
  const char* env = std::getenv("TAPEFLOW_BENCH_PROFILE");
  return env && std::string(env) == "1";
}

void train_step_cnn(benchmark::State& state, int64_t batch) {
  using tpf::config::Float32Precision;
  const Float32Precision previous = tpf::config::float32_matmul_precision();
  tpf::config::set_float32_matmul_precision(Float32Precision::highest);
  tpf::manual_seed(7);
  nn::Sequential model = samples::mnist_cnn();
  tpf::optim::Adam adam(1e-3);
  const tpf::Tensor x =
      tpf::random_uniform({batch, 1, 28, 28}, 0.0, 1.0, tpf::float32, gpu0);
  const tpf::Tensor y = tpf::cast(
      tpf::random_uniform({batch}, 0.0, 10.0, tpf::float32, gpu0), tpf::int64);
  {
    tpf::NoGradGuard no_grad;  // builds the weights on x's device
    model(x);
  }
  auto params = model.parameters();
  adam.build(params);
  model.train();
  const std::vector<tpf::Tensor> sources(params.begin(), params.end());
  const auto step = [&] {
    tpf::GradientTape tape;
    const tpf::Tensor loss =
        tpf::mean(nn::sparse_softmax_cross_entropy_with_logits(y, model(x)));
    adam.apply_gradients(tape.gradient(loss, sources), params);
    tpf::synchronize(gpu0);
  };
  try {
    for (int i = 0; i < kWarmupSteps; ++i) step();
    for (auto _ : state) step();
    if (profile_requested()) {
      tpf::profiler::start();
      for (int i = 0; i < kProfiledSteps; ++i) step();
      std::cerr << "train_step_cnn_" << batch << ", " << kProfiledSteps
                << " steps:\n"
                << tpf::profiler::stop().table();
    }
  } catch (const tpf::Error& e) {
    // A missing kernel or an out-of-memory error ends this case only.
    state.SkipWithError(e.what());
  }
  state.counters["images"] = benchmark::Counter(
      double(batch) * double(state.iterations()), benchmark::Counter::kIsRate);
  tpf::config::set_float32_matmul_precision(previous);
}

}  // namespace

void register_train_cases() {
  for (const int64_t batch : {64, 512})
    reg("train_step_cnn_" + std::to_string(batch) + "/tapeflow",
        benchmark::kMillisecond, train_step_cnn, batch);
}

}  // namespace tapeflow_bench_cuda
