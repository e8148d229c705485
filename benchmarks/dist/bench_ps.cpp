// ps_roundtrip: a worker's pull + push of one variable, 4 KiB to 16 MiB, with
// 1 ps task and every other rank a worker, all at once; SGD applied on the
// ps. The first worker reports (Google Benchmark's formats):
//   mpirun -np 3 tapeflow_bench_ps --benchmark_repetitions=5
// Every rank runs every case with the same fixed iteration count: the ps
// serves the case's client, the workers time their loop.
#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <string>

#include "silent_reporter.hpp"
#include "tapeflow/dist.hpp"
#include "tapeflow/tapeflow.hpp"

namespace tpf = tapeflow;
namespace dist = tpf::dist;

namespace {

double cpu_seconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_utime.tv_sec + usage.ru_stime.tv_sec +
         1e-6 * (usage.ru_utime.tv_usec + usage.ru_stime.tv_usec);
}

void BM_ps_roundtrip(benchmark::State& state, dist::Server* server) {
  const int64_t count = state.range(0) / 4;
  tpf::Variable v(tpf::zeros({count}));
  dist::ParameterClient ps(*server);
  ps.create({{"v", v}}, [] { return std::make_unique<tpf::optim::SGD>(1e-3); });
  if (server->job_name() == "ps") {
    server->join();
    for (auto _ : state) {
    }
    return;
  }
  const auto grad = tpf::ones({count});
  for (auto _ : state) {
    ps.pull({v});
    ps.push({grad});
  }
  ps.done();
  state.SetBytesProcessed(2 * state.range(0) * state.iterations());
  state.counters["workers"] = server->cluster().num_tasks("worker");
}

}  // namespace

int main(int argc, char** argv) {
  dist::Server server(dist::ClusterSpec::from_world(1));
  for (int64_t bytes = 4 << 10; bytes <= 16 << 20; bytes *= 4)
    benchmark::RegisterBenchmark("ps_roundtrip", BM_ps_roundtrip, &server)
        ->Arg(bytes)
        ->Iterations(std::max<int64_t>(8, (64 << 20) / bytes))
        ->UseRealTime();
  benchmark::Initialize(&argc, argv);
  const double cpu0 = cpu_seconds();
  const auto wall0 = std::chrono::steady_clock::now();
  if (server.is_chief()) {
    benchmark::RunSpecifiedBenchmarks();
  } else {
    SilentReporter silent;
    benchmark::RunSpecifiedBenchmarks(&silent);
  }
  if (server.job_name() == "ps") {
    const double wall =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0)
            .count();
    std::fprintf(stderr, "ps: %.2f s of CPU over %.2f s\n",
                 cpu_seconds() - cpu0, wall);
  }
  benchmark::Shutdown();
  return 0;
}
