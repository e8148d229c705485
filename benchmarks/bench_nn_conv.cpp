// float32 nn cases of tapeflow (oneDNN underneath): conv2d, max_pool2d and
// fused batch norm, forward (fresh output per call) and train (forward plus
// the gradients on a fresh tape, seeded with a fixed dy). The peers are in
// onednn_peer_nn.cpp and torch_peer_nn.cpp; the shapes in bench_cases.hpp.
#include "bench_cases.hpp"
#include "tapeflow/tapeflow.hpp"

namespace tpf = tapeflow;

namespace tfbench {
namespace {

tpf::Tensor uniform(const tpf::Shape& shape) {
  return tpf::random_uniform(shape, -1.0, 1.0);
}

/** Runs fwd() per iteration, or fwd() and the gradients wrt `sources`. */
template <class Fwd>
void run(benchmark::State& state, bool train,
         const std::vector<tpf::Tensor>& sources, const tpf::Tensor& dy,
         Fwd fwd) {
  auto step = [&] {
    tpf::GradientTape tape;
    for (const tpf::Tensor& s : sources) tape.watch(s);
    const tpf::Tensor out = fwd();
    auto g = tape.gradient(out, sources, {dy});
    benchmark::DoNotOptimize(g);
  };
  tpf::Tensor y = fwd();  // warm-up: builds the cached primitives
  if (!(y.shape() == dy.shape())) {
    state.SkipWithError("unexpected output shape");
    return;
  }
  y = tpf::Tensor();
  if (train) step();  // and the backward ones
  for (auto _ : state) {
    if (!train) {
      y = fwd();
      benchmark::DoNotOptimize(y);
      y = tpf::Tensor();
      continue;
    }
    step();
  }
}

}  // namespace

void tf_conv2d(benchmark::State& state, ConvShape s, bool train,
               bool channels_last) {
  tpf::manual_seed(42);
  const int64_t out = s.hw + 2 * s.pad - s.k + 1;
  const bool last = channels_last;
  const tpf::Tensor x = uniform(last ? tpf::Shape{s.n, s.hw, s.hw, s.c}
                                     : tpf::Shape{s.n, s.c, s.hw, s.hw});
  const tpf::Tensor w = uniform(last ? tpf::Shape{s.k, s.k, s.c, s.o}
                                     : tpf::Shape{s.o, s.c, s.k, s.k});
  const tpf::Tensor dy = uniform(last ? tpf::Shape{s.n, out, out, s.o}
                                      : tpf::Shape{s.n, s.o, out, out});
  const tpf::nn::ConvOptions o{.padding = {s.pad, s.pad, s.pad, s.pad},
                               .data_format = last ? "NHWC" : "NCHW"};
  run(state, train, {x, w}, dy, [&] { return tpf::nn::conv2d(x, w, o); });
  set_conv_flops(state, s, train);
}

void tf_max_pool2d(benchmark::State& state, PoolShape s, bool train) {
  tpf::manual_seed(42);
  const auto* d = s.dims;
  const tpf::Tensor x = uniform({d[0], d[1], d[2], d[3]});
  const tpf::Tensor dy = uniform({d[0], d[1], d[2] / 2, d[3] / 2});
  const tpf::nn::PoolOptions o{.ksize = {2, 2}, .strides = {2, 2}};
  run(state, train, {x}, dy, [&] { return tpf::nn::max_pool2d(x, o); });
}

void tf_max_pool2d_with_argmax(benchmark::State& state, PoolShape s) {
  tpf::manual_seed(42);
  const auto* d = s.dims;
  const tpf::Tensor x = uniform({d[0], d[1], d[2], d[3]});
  const tpf::nn::PoolOptions o{.ksize = {2, 2}, .strides = {2, 2}};
  for (auto _ : state) {
    const auto r = tpf::nn::max_pool2d_with_argmax(x, o);
    benchmark::DoNotOptimize(r.argmax);
  }
}

void tf_batch_norm(benchmark::State& state, bool train) {
  tpf::manual_seed(42);
  const auto* d = kBnShape;
  const tpf::Tensor x = uniform({d[0], d[1], d[2], d[3]});
  const tpf::Tensor dy = uniform({d[0], d[1], d[2], d[3]});
  const tpf::Tensor scale = uniform({d[1]}), offset = uniform({d[1]});
  run(state, train, {x, scale, offset}, dy, [&] {
    return tpf::nn::fused_batch_norm(x, scale, offset, kBnEps, true).y;
  });
}

}  // namespace tfbench
