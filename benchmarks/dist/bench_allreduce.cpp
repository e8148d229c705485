// all_reduce bus bandwidth, 4 KiB to 64 MiB of float32: tpf::dist in MPI's
// order (fast) and in the canonical order, against raw MPI_Allreduce on the
// same buffer. Under mpirun; rank 0 reports, in Google Benchmark's formats:
//   mpirun -np 2 tapeflow_bench_dist --benchmark_repetitions=5
// Random interleaving is refused: each rank would shuffle the cases its own
// way and the collectives would not pair up.
// busbw = algbw * 2(N-1)/N, nccl-tests' definition: comparable across N.
// Every rank must run the same iterations, so each case fixes its count.
#include <benchmark/benchmark.h>
#include <mpi.h>

#include <cstdio>
#include <string>

#include "common/models.hpp"
#include "silent_reporter.hpp"
#include "tapeflow/dist.hpp"
#include "tapeflow/tapeflow.hpp"

namespace tpf = tapeflow;
namespace dist = tpf::dist;

namespace {

void report(benchmark::State& state, int64_t bytes) {
  const int n = dist::world().size();
  const double moved = static_cast<double>(bytes) * state.iterations();
  state.SetBytesProcessed(static_cast<int64_t>(moved));  // algbw
  state.counters["busbw"] =
      benchmark::Counter(moved * 2.0 * (n - 1) / n, benchmark::Counter::kIsRate,
                         benchmark::Counter::kIs1024);
  state.counters["ranks"] = n;
}

void BM_allreduce_mpi(benchmark::State& state) {
  const int64_t count = state.range(0) / 4;
  const auto t = tpf::ones({count});
  auto* data = t.data<float>();
  for (auto _ : state)
    MPI_Allreduce(MPI_IN_PLACE, data, static_cast<int>(count), MPI_FLOAT,
                  MPI_SUM, MPI_COMM_WORLD);
  report(state, state.range(0));
}

void BM_allreduce(benchmark::State& state, dist::Order order) {
  const auto t = tpf::ones({state.range(0) / 4});
  auto& w = dist::world();
  for (auto _ : state) w.all_reduce(t, dist::ReduceOp::sum, order);
  report(state, state.range(0));
}

/**
 * One data-parallel training step of the Fashion-MNIST CNN (the main sample)
 * at global batch 64: items/s is the job's images/s. Run at -np 1 and -np 2
 * with cores/N threads each for the scaling; the argument is overlap (0 off,
 * 1 on).
 */
void BM_ddp_cnn_step(benchmark::State& state) {
  auto& w = dist::world();
  constexpr int64_t kGlobalBatch = 64;
  const int64_t local = kGlobalBatch / w.size();
  tpf::config::set_float32_matmul_precision("medium");
  tpf::nn::Sequential model = samples::mnist_cnn();
  const auto x =
      tpf::stateless_random_uniform({local, 1, 28, 28}, 1 + w.rank());
  const auto y = tpf::zeros({local}, tpf::int64);
  {
    tpf::NoGradGuard no_grad;
    model(x);
  }
  auto params = model.parameters();
  dist::DistributedDataParallel ddp(
      params,
      {.overlap = state.range(0) ? dist::Overlap::on : dist::Overlap::off});
  tpf::optim::Adam adam(1e-3);
  for (auto _ : state) {
    tpf::GradientTape tape;
    const auto loss = tpf::mean(
        tpf::nn::sparse_softmax_cross_entropy_with_logits(y, model(x)));
    adam.apply_gradients(ddp.gradient(tape, loss), params);
  }
  state.SetItemsProcessed(state.iterations() * kGlobalBatch);
  state.counters["ranks"] = w.size();
  state.counters["threads"] = tpf::config::intra_op_threads();
}

/** Enough iterations for about 50 ms at 2 GB/s, the same on every rank. */
int64_t iterations(int64_t bytes) {
  return std::clamp<int64_t>(100'000'000 / (bytes + 40'000), 4, 2000);
}

void register_all() {
  benchmark::RegisterBenchmark("ddp_cnn_step", BM_ddp_cnn_step)
      ->Arg(0)
      ->Arg(1)
      ->Iterations(60)
      ->UseRealTime()
      ->Unit(benchmark::kMillisecond);
  for (int64_t bytes = 4 << 10; bytes <= 64 << 20; bytes *= 4) {
    const int64_t iters = iterations(bytes);
    benchmark::RegisterBenchmark("allreduce/mpi", BM_allreduce_mpi)
        ->Arg(bytes)
        ->Iterations(iters)
        ->UseRealTime();
    benchmark::RegisterBenchmark("allreduce/fast", BM_allreduce,
                                 dist::Order::fast)
        ->Arg(bytes)
        ->Iterations(iters)
        ->UseRealTime();
    benchmark::RegisterBenchmark("allreduce/canonical", BM_allreduce,
                                 dist::Order::canonical)
        ->Arg(bytes)
        ->Iterations(iters)
        ->UseRealTime();
  }
}

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i)
    if (std::string(argv[i]).find("random_interleaving=t") !=
        std::string::npos) {
      std::fprintf(stderr,
                   "tapeflow_bench_dist: random interleaving would "
                   "order the cases differently on each rank\n");
      return 2;
    }
  dist::init();
  register_all();
  benchmark::Initialize(&argc, argv);
  if (dist::world().rank() == 0) {
    benchmark::RunSpecifiedBenchmarks();
  } else {
    SilentReporter silent;
    benchmark::RunSpecifiedBenchmarks(&silent);
  }
  benchmark::Shutdown();
  return 0;
}
