// Elementwise ops and reductions over 64M floats (256 MiB per operand, far
// beyond any L2), whose roof is copy_d2d_256MiB/raw in the same run (CUDA.md
// §7: elementwise >= 85% of its bytes/s, reductions >= 80%). bytes/s counts
// every operand read or written once. Each iteration ends in
// tpf::synchronize, so the time is what an eager program waits.
#include "bench_cuda.hpp"

namespace tpf = tapeflow;

namespace tapeflow_bench_cuda {
namespace {

constexpr int64_t kSide = 8192;  // kSide^2 = 64M elements
constexpr int64_t kElements = kSide * kSide;

enum class Elementwise { add, exp, broadcast_add, strided_add };

/** The op, and how many 4-byte operands it streams per element. */
struct Case {
  const char* name;
  Elementwise op;
  int operands;
};
constexpr Case kCases[] = {
    {"add_64M", Elementwise::add, 3},
    {"exp_64M", Elementwise::exp, 2},
    // A row (32 KiB, cached) added to every row: the non-flat index path.
    {"broadcast_add_64M", Elementwise::broadcast_add, 2},
    // One operand read through a transpose: the strided index path.
    {"strided_add_64M", Elementwise::strided_add, 3},
};

tpf::Tensor run(Elementwise op, const tpf::Tensor& a, const tpf::Tensor& b,
                const tpf::Tensor& row) {
  switch (op) {
    case Elementwise::add:
      return a + b;
    case Elementwise::exp:
      return tpf::exp(a);
    case Elementwise::broadcast_add:
      return a + row;
    case Elementwise::strided_add:
      return tpf::transpose(a) + b;
  }
  return {};
}

void elementwise_tapeflow(benchmark::State& state, Case c) {
  tpf::manual_seed(42);
  const auto a =
      tpf::random_uniform({kSide, kSide}, -1.0, 1.0, tpf::float32, gpu0);
  const auto b =
      tpf::random_uniform({kSide, kSide}, -1.0, 1.0, tpf::float32, gpu0);
  const auto row = tpf::random_uniform({kSide}, -1.0, 1.0, tpf::float32, gpu0);
  // Warm-up: the arena holds the output's block from here on.
  (void)run(c.op, a, b, row);
  tpf::synchronize(gpu0);
  for (auto _ : state) {
    benchmark::DoNotOptimize(run(c.op, a, b, row));
    tpf::synchronize(gpu0);
  }
  state.SetBytesProcessed(state.iterations() * c.operands * 4 * kElements);
}

enum class Reduction { sum, max, sum_rows, sum_columns };

/** The reduction's outputs over a 8192 x 8192 matrix. */
tpf::Tensor reduce(Reduction op, const tpf::Tensor& a) {
  switch (op) {
    case Reduction::sum:
      return tpf::sum(a);
    case Reduction::max:
      return tpf::max(a);
    case Reduction::sum_rows:
      return tpf::sum(a, {1});
    case Reduction::sum_columns:
      return tpf::sum(a, {0});
  }
  return {};
}

void reduce_tapeflow(benchmark::State& state, Reduction op) {
  tpf::manual_seed(42);
  const auto a =
      tpf::random_uniform({kSide, kSide}, 0.0, 1.0, tpf::float32, gpu0);
  // Mean of U(0, 1) is 0.5 and its max just below 1: a gross error in the
  // split shows here.
  const double value = reduce(op, a).cpu().data<float>()[0];
  const double expected = op == Reduction::max   ? 1.0
                          : op == Reduction::sum ? 0.5 * double(kElements)
                                                 : 0.5 * double(kSide);
  if (std::abs(value - expected) > 0.01 * expected) {
    state.SkipWithError("reduction: result far from its expected value");
    return;
  }
  for (auto _ : state) {
    benchmark::DoNotOptimize(reduce(op, a));
    tpf::synchronize(gpu0);
  }
  state.SetBytesProcessed(state.iterations() * 4 * kElements);
}

/**
 * The count of 64M bools (64 MiB read): what any, all and a bool sum cost,
 * as mixed precision's overflow check all(is_finite(grad)) runs every step.
 */
void count_nonzero_tapeflow(benchmark::State& state) {
  tpf::manual_seed(42);
  const auto a =
      tpf::random_uniform({kSide, kSide}, 0.0, 1.0, tpf::float32, gpu0);
  const auto flags = a > tpf::scalar_like(a, 0.5);
  const double half = 0.5 * double(kElements);
  const double count = double(tpf::count_nonzero(flags).item<int64_t>());
  if (std::abs(count - half) > 0.01 * half) {
    state.SkipWithError("count_nonzero: result far from half the elements");
    return;
  }
  for (auto _ : state) {
    benchmark::DoNotOptimize(tpf::count_nonzero(flags));
    tpf::synchronize(gpu0);
  }
  state.SetBytesProcessed(state.iterations() * kElements);
}

}  // namespace

void register_op_cases() {
  for (const Case& c : kCases)
    reg(std::string(c.name) + "/tapeflow", benchmark::kMillisecond,
        elementwise_tapeflow, c);
  reg("sum_64M/tapeflow", benchmark::kMillisecond, reduce_tapeflow,
      Reduction::sum);
  reg("max_64M/tapeflow", benchmark::kMillisecond, reduce_tapeflow,
      Reduction::max);
  // Per row (contiguous) and per column (strided: bias gradients).
  reg("sum_rows_64M/tapeflow", benchmark::kMillisecond, reduce_tapeflow,
      Reduction::sum_rows);
  reg("sum_columns_64M/tapeflow", benchmark::kMillisecond, reduce_tapeflow,
      Reduction::sum_columns);
  reg("count_nonzero_64M/tapeflow", benchmark::kMillisecond,
      count_nonzero_tapeflow);
}

}  // namespace tapeflow_bench_cuda
