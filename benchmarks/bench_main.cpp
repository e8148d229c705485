// tapeflow_bench: Google Benchmark main with the thread setup done first.
//
// Threads: env TAPEFLOW_BENCH_THREADS (default 2) is applied to tapeflow
// (config::set_intra_op_threads), OpenMP (omp_set_num_threads; oneDNN shares
// that runtime), libtorch (at::set_num_threads; its default here is 1) and
// OpenBLAS (libtorch's float32 matmul calls its pthread build, which would
// otherwise use every core whatever the setting).
// Contention: env TAPEFLOW_BENCH_BUSY=N runs N CPU-bound processes (a spin
// loop each) beside the whole run, as a user's machine runs something else;
// benchmarks/contention.sh compares such runs with quiet ones.
// Every case is registered here, in case order, so that the implementations
// of one case run back to back: `<case>/<impl>`, impl one of tapeflow,
// libtorch, onednn, raw_read, stream. All timings are wall-clock (UseRealTime):
// the kernels run on OpenMP threads that a CPU-time clock of the main thread
// would miss.
#include <dlfcn.h>
#include <omp.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "bench_cases.hpp"
#include "tapeflow/config.hpp"

namespace tfbench {
namespace {

/** A count from the environment, `fallback` when unset; exits if invalid. */
int count_from_env(const char* name, int fallback, int least) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  char* end = nullptr;
  const long n = std::strtol(v, &end, 10);
  if (*end != '\0' || n < least || n > 1024) {
    std::fprintf(stderr,
                 "tapeflow_bench: %s must be an integer in [%d, 1024], got "
                 "'%s'\n",
                 name, least, v);
    std::exit(2);
  }
  return static_cast<int>(n);
}

/** Starts n spinning processes that die with this one. */
std::vector<pid_t> start_busy_processes(int n) {
  std::vector<pid_t> pids;
  for (int i = 0; i < n; ++i) {
    const pid_t pid = fork();
    if (pid < 0) {
      std::perror("tapeflow_bench: fork");
      std::exit(2);
    }
    if (pid == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      volatile unsigned long spin = 0;
      for (;;) spin = spin + 1;
    }
    pids.push_back(pid);
  }
  return pids;
}

/** OpenBLAS is loaded by libtapeflow (LAPACK) and libtorch; -1 if absent. */
int set_openblas_threads(int n) {
  using Set = void (*)(int);
  using Get = int (*)();
  auto set =
      reinterpret_cast<Set>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads"));
  auto get =
      reinterpret_cast<Get>(dlsym(RTLD_DEFAULT, "openblas_get_num_threads"));
  if (!set || !get) return -1;
  set(n);
  return get();
}

template <class Fn, class... Args>
void reg(const std::string& name, benchmark::TimeUnit unit, Fn fn,
         Args... args) {
  benchmark::RegisterBenchmark(name.c_str(), fn, args...)
      ->UseRealTime()
      ->Unit(unit);
}

void register_all() {
  using benchmark::kMicrosecond;
  using benchmark::kMillisecond;
  using benchmark::kNanosecond;
  constexpr bool kTorch =
#ifdef TAPEFLOW_HAVE_TORCH
      true;
#else
      false;
#endif
  reg("overhead_add/tapeflow", kNanosecond, tf_overhead_add);
  if constexpr (kTorch)
    reg("overhead_add/libtorch", kNanosecond, torch_peer::overhead_add);
  reg("overhead_add_taped/tapeflow", kNanosecond, tf_overhead_add_taped);
  if constexpr (kTorch)
    reg("overhead_add_taped/libtorch", kNanosecond,
        torch_peer::overhead_add_taped);
  reg("overhead_add_new_tape/tapeflow", kNanosecond, tf_overhead_add_new_tape);
  reg("overhead_add_profiled/tapeflow", kNanosecond, tf_overhead_add_profiled);
  reg("overhead_chain/tapeflow", kMicrosecond, tf_overhead_chain);
  if constexpr (kTorch)
    reg("overhead_chain/libtorch", kMicrosecond, torch_peer::overhead_chain);

  for (int64_t n : {int64_t{1} << 20, int64_t{1} << 24}) {
    const std::string size = n == (int64_t{1} << 20) ? "_1M" : "_16M";
    for (EwOp op : {EwOp::add, EwOp::mul, EwOp::exp, EwOp::relu}) {
      const std::string name = ew_name(op) + size;
      reg(name + "/tapeflow", kMicrosecond, tf_elementwise, op, n);
      if constexpr (kTorch)
        reg(name + "/libtorch", kMicrosecond, torch_peer::elementwise, op, n);
      reg(name + "/stream", kMicrosecond, stream_elementwise, op, n);
    }
  }
  reg("sum_16M/tapeflow", kMicrosecond, tf_sum, int64_t{1} << 24);
  if constexpr (kTorch)
    reg("sum_16M/libtorch", kMicrosecond, torch_peer::sum, int64_t{1} << 24);
  reg("count_nonzero_16M/tapeflow", kMicrosecond, tf_count_nonzero,
      int64_t{1} << 24);
  reg("softmax_xent_1024x1000/tapeflow", kMicrosecond, tf_softmax_xent,
      int64_t{1024}, int64_t{1000});
  if constexpr (kTorch)
    reg("softmax_xent_1024x1000/libtorch", kMicrosecond,
        torch_peer::softmax_xent, int64_t{1024}, int64_t{1000});

  for (int64_t n : {256, 512, 1024, 2048}) {
    const std::string name = "matmul_" + std::to_string(n);
    reg(name + "/tapeflow", kMillisecond, tf_matmul, n);
    if constexpr (kTorch)
      reg(name + "/libtorch", kMillisecond, torch_peer::matmul, n);
    reg(name + "/onednn", kMillisecond, onednn_matmul, n);
  }
  // nn: conv2d_<a|b|c>_<fwd|train>, conv2d_<b|c>_nhwc_<fwd|train> (conv a's
  // one channel is the same memory either way), max_pool2d_*, batch_norm_*.
  for (bool last : {false, true}) {
    for (const ConvShape& s : kConvShapes) {
      if (last && s.c == 1) continue;
      for (bool train : {false, true}) {
        const std::string name = std::string("conv2d_") + s.name +
                                 (last ? "_nhwc" : "") +
                                 (train ? "_train" : "_fwd");
        reg(name + "/tapeflow", kMillisecond, tf_conv2d, s, train, last);
        if constexpr (kTorch)
          if (!last)
            reg(name + "/libtorch", kMillisecond, torch_peer::conv2d, s, train);
        reg(name + "/onednn", kMillisecond, onednn_conv2d, s, train, last);
      }
    }
  }
  for (const PoolShape& s : kPoolShapes) {
    for (bool train : {false, true}) {
      const std::string name =
          std::string("max_pool2d") + s.name + (train ? "_train" : "_fwd");
      reg(name + "/tapeflow", kMicrosecond, tf_max_pool2d, s, train);
      if constexpr (kTorch)
        reg(name + "/libtorch", kMicrosecond, torch_peer::max_pool2d, s, train);
      reg(name + "/onednn", kMicrosecond, onednn_max_pool2d, s, train);
    }
    reg(std::string("max_pool2d_with_argmax") + s.name + "/tapeflow",
        kMicrosecond, tf_max_pool2d_with_argmax, s);
  }
  for (bool train : {false, true}) {
    const std::string name = train ? "batch_norm_train" : "batch_norm_fwd";
    reg(name + "/tapeflow", kMillisecond, tf_batch_norm, train);
    if constexpr (kTorch)
      reg(name + "/libtorch", kMillisecond, torch_peer::batch_norm, train);
    reg(name + "/onednn", kMillisecond, onednn_batch_norm, train);
  }
  // One Adam update of the CNN's parameters, against its bandwidth bound.
  reg("adam_update/tapeflow", kMicrosecond, tf_adam_update);
  reg("adam_update/stream", kMicrosecond, stream_adam_update);
  // Training steps of the MNIST samples' models (counter images: images/s).
  for (bool bf16 : {false, true}) {
    const std::string name = bf16 ? "train_step_cnn_bf16" : "train_step_cnn";
    reg(name + "/tapeflow", kMillisecond, tf_train_step_cnn, bf16);
    if constexpr (kTorch)
      reg(name + "/libtorch", kMillisecond, torch_peer::train_step_cnn, bf16);
  }
  reg("train_step_softmax/tapeflow", kMicrosecond, tf_train_step_softmax);
  if constexpr (kTorch)
    reg("train_step_softmax/libtorch", kMicrosecond,
        torch_peer::train_step_softmax);
  reg("train_step_mlp/tapeflow", kMicrosecond, tf_train_step_mlp);
  if constexpr (kTorch)
    reg("train_step_mlp/libtorch", kMicrosecond, torch_peer::train_step_mlp);
  // An LSTM layer's forward and backward (counter sequences: sequences/s).
  reg("lstm_train/tapeflow", kMillisecond, tf_lstm_train);
  if constexpr (kTorch)
    reg("lstm_train/libtorch", kMillisecond, torch_peer::lstm_train);
  // Record files (bytes/s and records/s).
  reg("tfrecord_read/tapeflow", kMillisecond, tf_tfrecord_read);
  reg("tfrecord_read/raw_read", kMillisecond, raw_tfrecord_read);
  // tpf::data: does prefetch hide the input pipeline behind the step?
  reg("input_pipeline_no_prefetch/tapeflow", kMicrosecond, tf_input_pipeline,
      false);
  reg("input_pipeline_prefetch/tapeflow", kMicrosecond, tf_input_pipeline,
      true);
}

}  // namespace
}  // namespace tfbench

int main(int argc, char** argv) {
  const int threads = tfbench::count_from_env("TAPEFLOW_BENCH_THREADS", 2, 1);
  const std::vector<pid_t> busy = tfbench::start_busy_processes(
      tfbench::count_from_env("TAPEFLOW_BENCH_BUSY", 0, 0));
  tapeflow::config::set_intra_op_threads(threads);
  omp_set_num_threads(threads);
  const int blas_threads = tfbench::set_openblas_threads(threads);
  benchmark::AddCustomContext("tapeflow_bench_threads",
                              std::to_string(threads));
  benchmark::AddCustomContext("omp_max_threads",
                              std::to_string(omp_get_max_threads()));
  benchmark::AddCustomContext("openblas_threads", std::to_string(blas_threads));
  benchmark::AddCustomContext("busy_processes", std::to_string(busy.size()));
  benchmark::AddCustomContext("adapt_to_load",
                              tapeflow::config::adapt_to_load() ? "on" : "off");
#ifdef TAPEFLOW_HAVE_TORCH
  tfbench::torch_peer::set_threads(threads);
  benchmark::AddCustomContext("libtorch_version",
                              tfbench::torch_peer::version());
  benchmark::AddCustomContext("libtorch_threads",
                              std::to_string(tfbench::torch_peer::threads()));
#endif
  tfbench::register_all();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  for (const pid_t pid : busy) {
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
  }
  return 0;
}
