// libtorch peer, part 2: elementwise, reduction and matmul throughput on
// contiguous float32 tensors, a fresh output per call, no autograd.
#include <torch/torch.h>

#include <cmath>

#include "bench_cases.hpp"

namespace tfbench::torch_peer {
namespace {

torch::Tensor run_op(EwOp op, const torch::Tensor& a, const torch::Tensor& b) {
  switch (op) {
    case EwOp::add:
      return a + b;
    case EwOp::mul:
      return a * b;
    case EwOp::exp:
      return torch::exp(a);
    case EwOp::relu:
      return torch::relu(a);
  }
  return {};
}

torch::Tensor uniform(at::IntArrayRef shape, double lo, double hi) {
  return torch::empty(shape, torch::kFloat32).uniform_(lo, hi);
}

}  // namespace

void elementwise(benchmark::State& state, EwOp op, int64_t n) {
  torch::manual_seed(42);
  const torch::Tensor a = uniform({n}, -1.0, 1.0);
  const torch::Tensor b = uniform({n}, -1.0, 1.0);
  torch::Tensor c = run_op(op, a, b);
  c = torch::Tensor();
  for (auto _ : state) {
    c = run_op(op, a, b);
    benchmark::DoNotOptimize(c);
    c = torch::Tensor();
  }
  set_ew_bytes(state, op, n);
}

void sum(benchmark::State& state, int64_t n) {
  torch::manual_seed(42);
  const torch::Tensor a = uniform({n}, 0.0, 1.0);
  torch::Tensor s = torch::sum(a);
  const double mean = s.item<double>() / double(n);
  if (mean < 0.49 || mean > 0.51) {
    state.SkipWithError("libtorch sum: result far from n/2");
    return;
  }
  for (auto _ : state) {
    s = torch::sum(a);
    benchmark::DoNotOptimize(s);
  }
  state.SetBytesProcessed(state.iterations() * 4 * n);
}

void matmul(benchmark::State& state, int64_t n) {
  torch::manual_seed(42);
  const torch::Tensor a = uniform({n, n}, -1.0, 1.0);
  const torch::Tensor b = uniform({n, n}, -1.0, 1.0);
  torch::Tensor c = torch::matmul(a, b);
  const double want =
      (a[0].to(torch::kFloat64) * b.select(1, 0).to(torch::kFloat64))
          .sum()
          .item<double>();
  if (std::abs(c[0][0].item<double>() - want) >
      1e-4 * double(n) * std::max(1.0, std::abs(want))) {
    state.SkipWithError("libtorch matmul: wrong c[0][0]");
    return;
  }
  c = torch::Tensor();
  for (auto _ : state) {
    c = torch::matmul(a, b);
    benchmark::DoNotOptimize(c);
    c = torch::Tensor();
  }
  set_matmul_flops(state, n);
}

void softmax_xent(benchmark::State& state, int64_t batch, int64_t classes) {
  torch::manual_seed(42);
  const torch::Tensor logits =
      torch::randn({batch, classes}, torch::kFloat32).requires_grad_(true);
  const torch::Tensor labels =
      torch::randint(0, classes, {batch}, torch::kInt64);
  for (auto _ : state) {
    const torch::Tensor loss =
        torch::nn::functional::cross_entropy(logits, labels);
    const auto g = torch::autograd::grad({loss}, {logits});
    benchmark::DoNotOptimize(g[0]);
  }
}

}  // namespace tfbench::torch_peer
