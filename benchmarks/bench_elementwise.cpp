// Elementwise float32 throughput of tapeflow: c = op(a[, b]) on contiguous
// 1-D tensors, a fresh output per call (as user code gets it), no tape.
#include "bench_cases.hpp"
#include "tapeflow/tapeflow.hpp"

namespace tpf = tapeflow;

namespace tfbench {
namespace {

tpf::Tensor run_op(EwOp op, const tpf::Tensor& a, const tpf::Tensor& b) {
  switch (op) {
    case EwOp::add:
      return a + b;
    case EwOp::mul:
      return a * b;
    case EwOp::exp:
      return tpf::exp(a);
    case EwOp::relu:
      return tpf::relu(a);
  }
  return {};
}

}  // namespace

void tf_elementwise(benchmark::State& state, EwOp op, int64_t n) {
  tpf::manual_seed(42);
  const tpf::Tensor a = tpf::random_uniform({n}, -1.0, 1.0);
  const tpf::Tensor b = tpf::random_uniform({n}, -1.0, 1.0);
  tpf::Tensor c = run_op(op, a, b);  // warm-up: first touch of the output
  c = tpf::Tensor();                 // give the block back to the cache
  for (auto _ : state) {
    c = run_op(op, a, b);
    benchmark::DoNotOptimize(c);
    c = tpf::Tensor();  // as a temporary would: the next call reuses it
  }
  set_ew_bytes(state, op, n);
}

}  // namespace tfbench
