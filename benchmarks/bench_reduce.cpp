// Full reduction of a contiguous float32 vector (bytes/s counts the input).
#include "bench_cases.hpp"
#include "tapeflow/tapeflow.hpp"

namespace tpf = tapeflow;

namespace tfbench {

void tf_sum(benchmark::State& state, int64_t n) {
  tpf::manual_seed(42);
  const tpf::Tensor a = tpf::random_uniform({n}, 0.0, 1.0);
  tpf::Tensor s = tpf::sum(a);
  // Mean of U(0,1) is 0.5: a gross summation error shows up here.
  const double mean = s.item<double>() / double(n);
  if (mean < 0.49 || mean > 0.51) {
    state.SkipWithError("sum: result far from n/2");
    return;
  }
  for (auto _ : state) {
    s = tpf::sum(a);
    benchmark::DoNotOptimize(s);
  }
  state.SetBytesProcessed(state.iterations() * 4 * n);
}

}  // namespace tfbench
