// tapeflow_bench_cuda: the GPU runtime against raw CUDA in the same run
// (CUDA.md §7). Cases are `<case>/<impl>`, impl `tapeflow` or `raw` (pinned
// cudaMemcpyAsync, cudaMalloc/cudaFree on one stream, cublasGemmEx, bare
// kernel launches). This file: copies (copy_d2d_256MiB/raw is the roof of the
// elementwise and reduction cases), allocation, small-op latency, and main.
// Every iteration ends in a synchronization, so wall time is what an eager
// user sees. Exits 0 with a message where no GPU is present (CPU CI,
// gpu_check's bundle on a machine without one).
#include "bench_cuda.hpp"

#include <cstdio>
#include <string>

#include "small_ops_raw.hpp"

namespace tpf = tapeflow;
using namespace tapeflow_bench_cuda;

namespace {

constexpr int64_t kMiB = int64_t{1} << 20;

/** Raw CUDA buffers for the baselines, freed at the end of the case. */
struct Raw {
  void* pinned = nullptr;
  void* device = nullptr;
  void* device2 = nullptr;
  cudaStream_t stream = nullptr;
  ~Raw() {
    cudaFreeHost(pinned);
    cudaFree(device);
    cudaFree(device2);
    if (stream) cudaStreamDestroy(stream);
  }
  bool make(benchmark::State& state, size_t bytes, bool second) {
    return !failed(state, cudaSetDevice(0), "cudaSetDevice") &&
           !failed(state,
                   cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking),
                   "cudaStreamCreate") &&
           !failed(state, cudaHostAlloc(&pinned, bytes, cudaHostAllocDefault),
                   "cudaHostAlloc") &&
           !failed(state, cudaMalloc(&device, bytes), "cudaMalloc") &&
           (!second ||
            !failed(state, cudaMalloc(&device2, bytes), "cudaMalloc"));
  }
};

void set_bytes(benchmark::State& state, int64_t bytes) {
  state.SetBytesProcessed(state.iterations() * bytes);
}

// ---- host to device -------------------------------------------------------

void h2d_tapeflow(benchmark::State& state, int64_t bytes) {
  const tpf::Tensor host = tpf::ones({bytes / 4}, tpf::float32);
  for (auto _ : state) {
    const tpf::Tensor d = host.to(gpu0);
    tpf::synchronize(gpu0);
  }
  set_bytes(state, bytes);
}

void h2d_raw(benchmark::State& state, int64_t bytes) {
  Raw raw;
  if (!raw.make(state, bytes, false)) return;
  for (auto _ : state) {
    cudaMemcpyAsync(raw.device, raw.pinned, bytes, cudaMemcpyHostToDevice,
                    raw.stream);
    if (failed(state, cudaStreamSynchronize(raw.stream), "h2d")) return;
  }
  set_bytes(state, bytes);
}

// ---- device to host -------------------------------------------------------

void d2h_tapeflow(benchmark::State& state, int64_t bytes) {
  const tpf::Tensor d = tpf::ones({bytes / 4}, tpf::float32, gpu0);
  for (auto _ : state) benchmark::DoNotOptimize(d.cpu());
  set_bytes(state, bytes);
}

void d2h_raw(benchmark::State& state, int64_t bytes) {
  Raw raw;
  if (!raw.make(state, bytes, false)) return;
  for (auto _ : state) {
    cudaMemcpyAsync(raw.pinned, raw.device, bytes, cudaMemcpyDeviceToHost,
                    raw.stream);
    if (failed(state, cudaStreamSynchronize(raw.stream), "d2h")) return;
  }
  set_bytes(state, bytes);
}

// ---- device to device: the roof of elementwise ops (read + write) ---------

void d2d_tapeflow(benchmark::State& state, int64_t bytes) {
  const tpf::Tensor src = tpf::ones({bytes / 4}, tpf::float32, gpu0);
  tpf::Variable dst(tpf::zeros({bytes / 4}, tpf::float32, gpu0));
  for (auto _ : state) {
    dst.assign(src);  // the Cast kernel's same-dtype copy
    tpf::synchronize(gpu0);
  }
  set_bytes(state, 2 * bytes);
}

void d2d_raw(benchmark::State& state, int64_t bytes) {
  Raw raw;
  if (!raw.make(state, bytes, true)) return;
  for (auto _ : state) {
    cudaMemcpyAsync(raw.device2, raw.device, bytes, cudaMemcpyDeviceToDevice,
                    raw.stream);
    if (failed(state, cudaStreamSynchronize(raw.stream), "d2d")) return;
  }
  set_bytes(state, 2 * bytes);
}

/** GPU 0 to GPU 1 (peer copy), where two GPUs are present. */
void peer_tapeflow(benchmark::State& state, int64_t bytes) {
  const tpf::Tensor src = tpf::ones({bytes / 4}, tpf::float32, gpu0);
  for (auto _ : state) {
    const tpf::Tensor d = src.to(tpf::Device::cuda(1));
    tpf::synchronize(tpf::Device::cuda(1));
  }
  set_bytes(state, bytes);
}

// ---- allocation and free --------------------------------------------------

void alloc_tapeflow(benchmark::State& state, int64_t bytes) {
  for (auto _ : state)
    benchmark::DoNotOptimize(tpf::empty({bytes / 4}, tpf::float32, gpu0));
}

void alloc_raw(benchmark::State& state, int64_t bytes) {
  if (failed(state, cudaSetDevice(0), "cudaSetDevice")) return;
  for (auto _ : state) {
    void* p = nullptr;
    if (failed(state, cudaMalloc(&p, bytes), "cudaMalloc")) return;
    cudaFree(p);
  }
}

// ---- small-op latency -----------------------------------------------------

void small_add_tapeflow(benchmark::State& state) {
  const tpf::Tensor a = tpf::ones({4}, tpf::float32, gpu0);
  const tpf::Tensor b = tpf::ones({4}, tpf::float32, gpu0);
  for (auto _ : state) {
    benchmark::DoNotOptimize(a + b);
    tpf::synchronize(gpu0);
  }
}

/** Ops per iteration of the pipelined small-op case. */
constexpr int kSmallOpChain = 64;

/** The small-op cases' counter: wall time per op of the chain. */
void set_us_per_op(benchmark::State& state) {
  state.counters["us_per_op"] = benchmark::Counter(
      1e-6 * kSmallOpChain, benchmark::Counter::kIsIterationInvariantRate |
                                benchmark::Counter::kInvert);
}

/**
 * CUDA.md's small-op case: a chain of dependent elementwise ops on 1K-element
 * tensors (alternately y * c and y + b), launched back to back with one
 * synchronization at the end, as an eager training loop issues them. The
 * us_per_op counter is the wall time per op (target: at most 5 us; PyTorch
 * eager takes about 7); tools/gpu_peer_nn.py times the same chain in torch.
 */
void small_ops_pipelined_tapeflow(benchmark::State& state) {
  const tpf::Tensor b = tpf::full({1024}, 0.5, tpf::float32, gpu0);
  const tpf::Tensor c = tpf::full({1024}, 0.999, tpf::float32, gpu0);
  for (auto _ : state) {
    tpf::Tensor y = c;
    for (int i = 0; i < kSmallOpChain; ++i) y = i % 2 ? y + b : y * c;
    tpf::synchronize(gpu0);
    benchmark::DoNotOptimize(y);
  }
  set_us_per_op(state);
}

/** The same chain as bare launches (small_ops_raw.cu): the floor that the
 * machine's driver and GPU set under tapeflow's. */
void small_ops_pipelined_raw(benchmark::State& state) {
  constexpr int n = 1024;
  Raw raw;
  if (!raw.make(state, 4 * n * sizeof(float), false) ||
      failed(state,
             cudaMemsetAsync(raw.device, 0, 4 * n * sizeof(float), raw.stream),
             "cudaMemsetAsync"))
    return;
  float* buffers = static_cast<float*>(raw.device);
  const SmallOpChain chain{buffers,         buffers + n, buffers + 2 * n,
                           buffers + 3 * n, n,           kSmallOpChain};
  for (auto _ : state) {
    if (failed(state, launch_small_op_chain(chain, raw.stream), "launch") ||
        failed(state, cudaStreamSynchronize(raw.stream), "synchronize"))
      return;
  }
  set_us_per_op(state);
}

std::string size_name(int64_t bytes) {
  return std::to_string(bytes / kMiB) + "MiB";
}

void register_copy_cases(int devices) {
  using benchmark::kMicrosecond;
  using benchmark::kMillisecond;
  for (const int64_t bytes : {4 * kMiB, 256 * kMiB}) {
    const std::string s = size_name(bytes);
    const auto unit = bytes > 16 * kMiB ? kMillisecond : kMicrosecond;
    reg("copy_h2d_" + s + "/tapeflow", unit, h2d_tapeflow, bytes);
    reg("copy_h2d_" + s + "/raw", unit, h2d_raw, bytes);
    reg("copy_d2h_" + s + "/tapeflow", unit, d2h_tapeflow, bytes);
    reg("copy_d2h_" + s + "/raw", unit, d2h_raw, bytes);
  }
  reg("copy_d2d_256MiB/tapeflow", kMillisecond, d2d_tapeflow, 256 * kMiB);
  reg("copy_d2d_256MiB/raw", kMillisecond, d2d_raw, 256 * kMiB);
  if (devices > 1)
    reg("copy_peer_256MiB/tapeflow", kMillisecond, peer_tapeflow, 256 * kMiB);
  for (const int64_t bytes : {kMiB, 64 * kMiB}) {
    reg("alloc_free_" + size_name(bytes) + "/tapeflow", kMicrosecond,
        alloc_tapeflow, bytes);
    reg("alloc_free_" + size_name(bytes) + "/raw", kMicrosecond, alloc_raw,
        bytes);
  }
  reg("small_add_4/tapeflow", kMicrosecond, small_add_tapeflow);
  reg("small_ops_1K_pipelined/tapeflow", kMicrosecond,
      small_ops_pipelined_tapeflow);
  reg("small_ops_1K_pipelined/raw", kMicrosecond, small_ops_pipelined_raw);
}

}  // namespace

int main(int argc, char** argv) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("tapeflow_bench_cuda: no CUDA device here, nothing to run\n");
    return 0;
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  register_copy_cases(devices);
  register_op_cases();
  register_gemm_cases();
  register_nn_cases();
  register_train_cases();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
