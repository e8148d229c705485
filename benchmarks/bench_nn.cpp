// Neural-network cases of tapeflow: the sparse softmax cross-entropy of a
// 1024 x 1000 batch, forward and gradient with respect to the logits.
#include "bench_cases.hpp"
#include "tapeflow/tapeflow.hpp"

namespace tpf = tapeflow;

namespace tfbench {

void tf_softmax_xent(benchmark::State& state, int64_t batch, int64_t classes) {
  tpf::manual_seed(42);
  const tpf::Tensor logits = tpf::random_normal({batch, classes});
  const tpf::Tensor labels =
      tpf::cast(tpf::random_uniform({batch}, 0.0, double(classes)), tpf::int64);
  for (auto _ : state) {
    tpf::GradientTape tape;
    tape.watch(logits);
    const tpf::Tensor loss = tpf::mean(
        tpf::nn::sparse_softmax_cross_entropy_with_logits(labels, logits));
    const auto g = tape.gradient(loss, {logits});
    benchmark::DoNotOptimize(g[0]);
  }
}

}  // namespace tfbench
