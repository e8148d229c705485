// adam_update: one Adam step over the parameters of the samples' CNN (3.3M
// float32, ApplyAdam in one pass), against the memory-bandwidth bound of
// that step: a plain OpenMP loop with Adam's access pattern (reads w, g, m
// and v, writes w, m and v in place) with adds for arithmetic. memcpy of the
// same bytes is no bound here: at this size its copies either stream around
// the cache or read each destination line before writing it, and ran at half
// the loop's speed.
#include <omp.h>

#include <vector>

#include "bench_cases.hpp"
#include "common/models.hpp"
#include "tapeflow/tapeflow.hpp"

namespace tpf = tapeflow;

namespace tfbench {
namespace {

/** Parameters of mnist_cnn, built on a batch of one image. */
std::vector<tpf::Variable> cnn_parameters() {
  tpf::manual_seed(7);
  tpf::nn::Sequential model = samples::mnist_cnn();
  tpf::NoGradGuard no_grad;
  model(tpf::zeros({1, 1, 28, 28}));
  return model.parameters();
}

int64_t numel_of(const std::vector<tpf::Variable>& params) {
  int64_t n = 0;
  for (const tpf::Variable& p : params) n += p.numel();
  return n;
}

}  // namespace

void tf_adam_update(benchmark::State& state) {
  std::vector<tpf::Variable> params = cnn_parameters();
  std::vector<tpf::Tensor> grads;
  for (const tpf::Variable& p : params)
    grads.push_back(tpf::random_uniform(p.shape(), -1.0, 1.0));
  tpf::optim::Adam adam(1e-3);
  adam.build(params);
  adam.apply_gradients(grads, params);  // warm-up
  for (auto _ : state) adam.apply_gradients(grads, params);
  state.SetBytesProcessed(state.iterations() * 7 * 4 * numel_of(params));
}

void stream_adam_update(benchmark::State& state) {
  const int64_t n = numel_of(cnn_parameters());
  std::vector<float> w(n, 1.f), g(n, 1e-9f), m(n, 0.f), v(n, 0.f);
  float* __restrict pw = w.data();
  float* __restrict pm = m.data();
  float* __restrict pv = v.data();
  const float* __restrict pg = g.data();
  for (auto _ : state) {
#pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < n; ++i) {
      const float gi = pg[i], mi = pm[i], vi = pv[i];
      pm[i] = mi + gi;
      pv[i] = vi + gi;
      pw[i] += mi + vi;
    }
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * 7 * 4 * n);
}

}  // namespace tfbench
