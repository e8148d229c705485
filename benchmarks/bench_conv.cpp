// float32 conv2d (oneDNN): forward of a LeNet-style first layer, and forward
// plus both gradients of a 3x3 SAME layer, fresh outputs per call.
#include "bench_cases.hpp"
#include "tapeflow/tapeflow.hpp"

namespace tpf = tapeflow;

namespace tfbench {

void tf_conv2d_forward(benchmark::State& state) {
  tpf::manual_seed(42);
  const tpf::Tensor x = tpf::random_uniform({64, 1, 28, 28}, -1.0, 1.0);
  const tpf::Tensor w = tpf::random_uniform({32, 1, 5, 5}, -1.0, 1.0);
  tpf::Tensor y = tpf::nn::conv2d(x, w);  // warm-up: builds the primitive
  for (auto _ : state) {
    y = tpf::nn::conv2d(x, w);
    benchmark::DoNotOptimize(y);
    y = tpf::Tensor();
  }
  // 2 flops per multiply-add: 64 x 32 x 24 x 24 outputs, 25 taps each.
  state.counters["GFLOP"] = benchmark::Counter(
      2.0 * 64 * 32 * 24 * 24 * 25 * 1e-9 * double(state.iterations()),
      benchmark::Counter::kIsRate);
}

void tf_conv2d_train_step(benchmark::State& state) {
  tpf::manual_seed(42);
  const tpf::Tensor x = tpf::random_uniform({64, 32, 14, 14}, -1.0, 1.0);
  const tpf::Tensor w = tpf::random_uniform({64, 32, 3, 3}, -1.0, 1.0);
  const tpf::nn::ConvOptions o{.padding = "SAME"};
  for (auto _ : state) {
    tpf::GradientTape tape;
    tape.watch(x);
    tape.watch(w);
    const tpf::Tensor y = tpf::nn::conv2d(x, w, o);
    auto g = tape.gradient(y, {x, w});
    benchmark::DoNotOptimize(g);
  }
}

}  // namespace tfbench
