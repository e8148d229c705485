// Full reductions of contiguous vectors (bytes/s counts the input): a float32
// sum, and the count of a bool_ vector that any, all and bool sums run.
#include <cmath>

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

void tf_count_nonzero(benchmark::State& state, int64_t n) {
  tpf::manual_seed(42);
  const tpf::Tensor a = tpf::random_uniform({n}, 0.0, 1.0);
  const tpf::Tensor flags = a > tpf::scalar_like(a, 0.5);
  const double half = 0.5 * double(n);
  if (std::abs(double(tpf::count_nonzero(flags).item<int64_t>()) - half) >
      0.01 * half) {
    state.SkipWithError("count_nonzero: result far from n/2");
    return;
  }
  for (auto _ : state) {
    tpf::Tensor c = tpf::count_nonzero(flags);
    benchmark::DoNotOptimize(c);
  }
  state.SetBytesProcessed(state.iterations() * n);
}

}  // namespace tfbench
