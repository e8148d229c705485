// libtorch peer, part 1: thread setup and per-op overhead on 1-element
// float32 tensors. Compiled as C++17 into its own static library; tapeflow
// TUs see only bench_cases.hpp.
#include <torch/torch.h>
#include <torch/version.h>

#include <cmath>

#include "bench_cases.hpp"

namespace tfbench::torch_peer {

void set_threads(int n) {
  at::set_num_threads(n);
}
int threads() {
  return at::get_num_threads();
}
std::string version() {
  return TORCH_VERSION;
}

// c = a + b on tensors that do not require grad (no graph is built).
void overhead_add(benchmark::State& state) {
  const torch::Tensor a = torch::full({1}, 1.0f), b = torch::full({1}, 2.0f);
  torch::Tensor c = a + b;
  for (auto _ : state) {
    c = a + b;
    benchmark::DoNotOptimize(c);
  }
}

// c = a + b with a.requires_grad(): every op creates a graph node (freed with
// the previous c), the counterpart of recording on a tapeflow tape.
void overhead_add_taped(benchmark::State& state) {
  const torch::Tensor a = torch::full({1}, 1.0f).requires_grad_(true);
  const torch::Tensor b = torch::full({1}, 2.0f);
  torch::Tensor c = a + b;
  if (!c.requires_grad()) {
    state.SkipWithError("libtorch did not record the op");
    return;
  }
  for (auto _ : state) {
    c = a + b;
    benchmark::DoNotOptimize(c);
  }
}

// kChainOps ops (x = x * c; x = x + c) from a requires_grad x0, then
// torch::autograd::grad(x, x0); per_op = wall time / kChainOps.
void overhead_chain(benchmark::State& state) {
  const torch::Tensor x0 = torch::full({1}, 1.0f).requires_grad_(true);
  const torch::Tensor c = torch::full({1}, 0.999f);
  auto run = [&] {
    torch::Tensor x = x0;
    for (int i = 0; i < kChainOps / 2; ++i) {
      x = x * c;
      x = x + c;
    }
    return torch::autograd::grad({x}, {x0});
  };
  float expect = 1.0f;
  for (int i = 0; i < kChainOps / 2; ++i) expect *= 0.999f;
  const auto g0 = run();
  if (std::abs(g0[0].item<float>() - expect) > 1e-4f) {
    state.SkipWithError("libtorch overhead_chain: wrong gradient");
    return;
  }
  for (auto _ : state) {
    auto g = run();
    benchmark::DoNotOptimize(g);
  }
  set_chain_per_op(state);
}

}  // namespace tfbench::torch_peer
