// libtorch peer, part 3: conv2d, max_pool2d and batch norm (training mode),
// forward, or forward plus torch::autograd::grad seeded with a fixed dy.
#include <torch/torch.h>

#include <functional>
#include <vector>

#include "bench_cases.hpp"

namespace tfbench::torch_peer {
namespace {

torch::Tensor uniform(at::IntArrayRef shape, bool grad = false) {
  return torch::empty(shape, torch::kFloat32)
      .uniform_(-1.0, 1.0)
      .requires_grad_(grad);
}

void run(benchmark::State& state, bool train,
         const std::vector<torch::Tensor>& sources, const torch::Tensor& dy,
         const std::function<torch::Tensor()>& fwd) {
  {
    torch::NoGradGuard no_grad;
    if (fwd().sizes() != dy.sizes()) {
      state.SkipWithError("libtorch: unexpected output shape");
      return;
    }
  }
  if (train) torch::autograd::grad({fwd()}, sources, {dy});  // warm-up
  for (auto _ : state) {
    if (!train) {
      torch::NoGradGuard no_grad;
      torch::Tensor y = fwd();
      benchmark::DoNotOptimize(y);
      continue;
    }
    const torch::Tensor y = fwd();
    const auto g = torch::autograd::grad({y}, sources, {dy});
    benchmark::DoNotOptimize(g);
  }
}

}  // namespace

void conv2d(benchmark::State& state, ConvShape s, bool train) {
  torch::manual_seed(42);
  const torch::Tensor x = uniform({s.n, s.c, s.hw, s.hw}, train);
  const torch::Tensor w = uniform({s.o, s.c, s.k, s.k}, train);
  const int64_t out = s.hw + 2 * s.pad - s.k + 1;
  const torch::Tensor dy = uniform({s.n, s.o, out, out});
  run(state, train, {x, w}, dy,
      [&] { return torch::conv2d(x, w, {}, 1, s.pad); });
  set_conv_flops(state, s, train);
}

void max_pool2d(benchmark::State& state, PoolShape s, bool train) {
  torch::manual_seed(42);
  const auto* d = s.dims;
  const torch::Tensor x = uniform({d[0], d[1], d[2], d[3]}, train);
  const torch::Tensor dy = uniform({d[0], d[1], d[2] / 2, d[3] / 2});
  run(state, train, {x}, dy, [&] { return torch::max_pool2d(x, 2, 2); });
}

void batch_norm(benchmark::State& state, bool train) {
  torch::manual_seed(42);
  const auto* d = kBnShape;
  const torch::Tensor x = uniform({d[0], d[1], d[2], d[3]}, train);
  const torch::Tensor dy = uniform({d[0], d[1], d[2], d[3]});
  const torch::Tensor scale = uniform({d[1]}, train);
  const torch::Tensor offset = uniform({d[1]}, train);
  run(state, train, {x, scale, offset}, dy, [&] {
    return torch::batch_norm(x, scale, offset, {}, {}, /*training=*/true, 0.1,
                             kBnEps, /*cudnn_enabled=*/false);
  });
}

}  // namespace tfbench::torch_peer
