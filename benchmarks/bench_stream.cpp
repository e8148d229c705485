// The memory-bandwidth reference measured in the same run: STREAM's kernels
// (add: c = a + b; scale-like for the unary ops) as plain OpenMP loops over
// preallocated, first-touched arrays. Elementwise targets are ratios to it.
#include <omp.h>

#include <cmath>
#include <vector>

#include "bench_cases.hpp"

namespace tfbench {

void stream_elementwise(benchmark::State& state, EwOp op, int64_t n) {
  std::vector<float> a(n, 0.5f), b(n, 0.25f), c(n, 0.f);
  float* pa = a.data();
  float* pb = b.data();
  float* pc = c.data();
  for (auto _ : state) {
    switch (op) {
      case EwOp::add:
#pragma omp parallel for simd schedule(static)
        for (int64_t i = 0; i < n; ++i) pc[i] = pa[i] + pb[i];
        break;
      case EwOp::mul:
#pragma omp parallel for simd schedule(static)
        for (int64_t i = 0; i < n; ++i) pc[i] = pa[i] * pb[i];
        break;
      case EwOp::exp:
#pragma omp parallel for simd schedule(static)
        for (int64_t i = 0; i < n; ++i) pc[i] = std::exp(pa[i]);
        break;
      case EwOp::relu:
#pragma omp parallel for simd schedule(static)
        for (int64_t i = 0; i < n; ++i) pc[i] = pa[i] > 0.f ? pa[i] : 0.f;
        break;
    }
    benchmark::DoNotOptimize(pc);
    benchmark::ClobberMemory();
  }
  set_ew_bytes(state, op, n);
}

}  // namespace tfbench
