// Square float32 matmul: tapeflow::matmul (fresh output per call) against a
// raw oneDNN matmul primitive created once, with its output preallocated,
// i.e. the best tapeflow's oneDNN backend could do.
#include <algorithm>
#include <cmath>
#include <dnnl.hpp>
#include <random>
#include <unordered_map>
#include <vector>

#include "bench_cases.hpp"
#include "tapeflow/tapeflow.hpp"

namespace tpf = tapeflow;

namespace tfbench {
namespace {

/** c[0][0] of a @ b, in double, for a spot check of the results. */
double corner(const float* a, const float* b, int64_t n) {
  double acc = 0;
  for (int64_t k = 0; k < n; ++k) acc += double(a[k]) * double(b[k * n]);
  return acc;
}

bool close_to(double got, double want, int64_t n) {
  return std::abs(got - want) <=
         1e-4 * double(n) * std::max(1.0, std::abs(want));
}

}  // namespace

void tf_matmul(benchmark::State& state, int64_t n) {
  tpf::manual_seed(42);
  const tpf::Tensor a = tpf::random_uniform({n, n}, -1.0, 1.0);
  const tpf::Tensor b = tpf::random_uniform({n, n}, -1.0, 1.0);
  tpf::Tensor c = tpf::matmul(a, b);  // warm-up: builds the cached primitive
  if (!close_to(c.data<float>()[0], corner(a.data<float>(), b.data<float>(), n),
                n)) {
    state.SkipWithError("matmul: wrong c[0][0]");
    return;
  }
  c = tpf::Tensor();
  for (auto _ : state) {
    c = tpf::matmul(a, b);
    benchmark::DoNotOptimize(c);
    c = tpf::Tensor();
  }
  set_matmul_flops(state, n);
}

void onednn_matmul(benchmark::State& state, int64_t n) {
  using dnnl::memory;
  std::mt19937 gen(42);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> a(n * n), b(n * n), c(n * n, 0.0f);
  for (float& v : a) v = dist(gen);
  for (float& v : b) v = dist(gen);

  dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  dnnl::stream s(eng);
  const memory::desc md({n, n}, memory::data_type::f32, memory::format_tag::ab);
  dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(md, md, md), eng);
  dnnl::matmul prim(pd);
  memory am(md, eng, a.data()), bm(md, eng, b.data()), cm(md, eng, c.data());
  const std::unordered_map<int, memory> args = {
      {DNNL_ARG_SRC, am}, {DNNL_ARG_WEIGHTS, bm}, {DNNL_ARG_DST, cm}};
  prim.execute(s, args);  // warm-up + check
  s.wait();
  if (!close_to(c[0], corner(a.data(), b.data(), n), n)) {
    state.SkipWithError("onednn matmul: wrong c[0][0]");
    return;
  }
  for (auto _ : state) {
    prim.execute(s, args);
    s.wait();
    benchmark::ClobberMemory();
  }
  set_matmul_flops(state, n);
  state.SetLabel(pd.impl_info_str());
}

}  // namespace tfbench
