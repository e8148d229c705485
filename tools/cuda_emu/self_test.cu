// The CUDA emulator's own test, written as CUDA and built as the backend is
// (launch_syntax.py, then g++ with cuda_emu.hpp): a block reduction through
// shared memory and barriers, warp shuffles with widths, CUB's BlockReduce,
// the runtime's checks, and the faults the emulator must catch, each in a
// child process that has to abort naming it. Run in both thread orders
// (CUDA_EMU_ORDER), as the backend's suites are.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cub/block/block_reduce.cuh>
#include <memory>
#include <string>
#include <vector>

// The emulator is built with AddressSanitizer: a bad access aborts, as the
// other faults do, and the case below sees SIGABRT.
extern "C" const char* __asan_default_options() {
  return "abort_on_error=1";
}

namespace {

// Which of the emulator's two builds this is: under AddressSanitizer
// (tools/cuda_emu) or race-checked (tools/cuda_emu/racecheck).
#ifdef __SANITIZE_ADDRESS__
constexpr bool kAddressChecked = true;
#else
constexpr bool kAddressChecked = false;
#endif
#ifdef __SANITIZE_THREAD__
constexpr bool kRaceChecked = true;
#else
constexpr bool kRaceChecked = false;
#endif

constexpr int kThreads = 128;

__global__ void tree_sum(const int* in, int* out) {
  __shared__ int partial[kThreads];
  const int t = threadIdx.x;
  partial[t] = in[blockIdx.x * kThreads + t];
  __syncthreads();
  for (int stride = kThreads / 2; stride > 0; stride /= 2) {
    if (t < stride) partial[t] += partial[t + stride];
    __syncthreads();
  }
  if (t == 0) out[blockIdx.x] = partial[0];
}

__global__ void shuffle_sums(const int* in, int* out, int width) {
  int v = in[threadIdx.x];
  for (int delta = width / 2; delta > 0; delta /= 2)
    v += __shfl_down_sync(0xffffffffu, v, delta, width);
  out[threadIdx.x] = v;
}

__global__ void block_reduce_max(const double* in, double* out) {
  using BlockReduce = cub::BlockReduce<double, kThreads>;
  __shared__ typename BlockReduce::TempStorage scratch;
  const double m = BlockReduce(scratch).Reduce(
      in[threadIdx.x], [](double a, double b) { return a > b ? a : b; });
  if (threadIdx.x == 0) *out = m;
}

// Thread t reads its neighbour's slot with no barrier in between: the
// forward order reads it before the neighbour writes, the reverse after.
__global__ void unsynchronized_neighbour(int* out) {
  __shared__ int slot[kThreads];
  const int t = threadIdx.x;
  slot[t] = t;
  out[t] = slot[(t + 1) % kThreads];
}

// Half a warp at a shuffle that names the whole warp, the other half at a
// barrier: neither can complete.
__global__ void shuffle_against_barrier(int* out) {
  if (threadIdx.x < 16)
    out[threadIdx.x] = __shfl_down_sync(0xffffffffu, 1, 1);
  else
    __syncthreads();
}

__global__ void shuffle_half_warp(int* out) {
  if (threadIdx.x >= 16) return;
  out[threadIdx.x] = __shfl_down_sync(0xffffffffu, 1, 1);
}

// Kernels for the race check (tools/cuda_emu/racecheck), which the faulty
// ones fail and the others pass.
__global__ void count_plainly(int* counter) {
  *counter += 1;
}

__global__ void count_atomically(int* counter) {
  atomicAdd(counter, 1);
}

__global__ void every_block_writes(int* out) {
  if (threadIdx.x == 0) *out = int(blockIdx.x);
}

// Each thread counts atomically, then reads the count plainly: a read that
// nothing orders after the other threads' atomics.
__global__ void count_then_read(int* counter, int* out) {
  atomicAdd(counter, 1);
  out[threadIdx.x] = *counter;
}

// Thread 0 raises a flag the others read, all through volatile accesses,
// which PTX makes relaxed atomics (as deferred_error.hpp reads its claim).
__global__ void volatile_flag(int* flag, int* out) {
  if (threadIdx.x == 0) *static_cast<volatile int*>(flag) = 1;
  out[threadIdx.x] = *static_cast<volatile int*>(flag);
}

// tree_sum without the barrier in its loop.
__global__ void tree_sum_unsynchronized(const int* in, int* out) {
  __shared__ int partial[kThreads];
  const int t = threadIdx.x;
  partial[t] = in[t];
  __syncthreads();
  for (int stride = kThreads / 2; stride > 0; stride /= 2)
    if (t < stride) partial[t] += partial[t + stride];
  if (t == 0) *out = partial[0];
}

// Two reductions through one TempStorage, a barrier between them or not.
__global__ void block_reduce_twice(const double* in, double* out,
                                   bool barrier) {
  using BlockReduce = cub::BlockReduce<double, kThreads>;
  __shared__ typename BlockReduce::TempStorage scratch;
  const double sum = BlockReduce(scratch).Sum(in[threadIdx.x]);
  if (barrier) __syncthreads();
  const double again = BlockReduce(scratch).Sum(2 * in[threadIdx.x]);
  if (threadIdx.x == 0) *out = sum + again;
}

// Each lane reads the slot of the lane after it in its warp: after a
// whole-warp shuffle, which orders the warp's lanes, or with nothing between.
__global__ void warp_neighbour(int* out, bool shuffle) {
  __shared__ int slot[64];
  const int t = threadIdx.x;
  slot[t] = t;
  if (shuffle) __shfl_down_sync(0xffffffffu, t, 1);
  out[t] = slot[(t & ~31) | ((t + 1) & 31)];
}

__global__ void traps() {
  if (threadIdx.x == 3) __trap();
}

__global__ void nothing() {}

__global__ void write_at(int* out, int index) {
  out[index] = 1;
}

__global__ void local_at(int* out, int index) {
  int local[4] = {};
  local[index] = 1;
  out[threadIdx.x] = local[threadIdx.x % 4];
}

struct DeviceFree {
  void operator()(void* p) const { cudaFree(p); }
};
template <class T>
using DeviceArray = std::unique_ptr<T[], DeviceFree>;

template <class T>
DeviceArray<T> device_array(size_t n) {
  void* p = nullptr;
  REQUIRE(cudaMalloc(&p, n * sizeof(T)) == cudaSuccess);
  return DeviceArray<T>(static_cast<T*>(p));
}

template <class T>
DeviceArray<T> device_copy(const std::vector<T>& host) {
  DeviceArray<T> device = device_array<T>(host.size());
  REQUIRE(cudaMemcpyAsync(device.get(), host.data(), host.size() * sizeof(T),
                          cudaMemcpyHostToDevice, nullptr) == cudaSuccess);
  return device;
}

template <class T>
std::vector<T> host_copy(const DeviceArray<T>& device, size_t n) {
  std::vector<T> host(n);
  REQUIRE(cudaMemcpyAsync(host.data(), device.get(), n * sizeof(T),
                          cudaMemcpyDeviceToHost, nullptr) == cudaSuccess);
  return host;
}

bool reverse_order() {
  const char* order = std::getenv("CUDA_EMU_ORDER");
  return order != nullptr && std::string(order) == "reverse";
}

// Runs `launch` in a child process: its exit signal and what it printed.
template <class Launch>
std::pair<int, std::string> in_child(Launch launch) {
  int pipe_fds[2];
  REQUIRE(pipe(pipe_fds) == 0);
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    // The abort is the child's verdict, not doctest's crash of the case.
    signal(SIGABRT, SIG_DFL);
    dup2(pipe_fds[1], STDOUT_FILENO);
    dup2(pipe_fds[1], STDERR_FILENO);
    launch();
    _exit(0);
  }
  close(pipe_fds[1]);
  std::string printed;
  char buffer[512];
  for (ssize_t n; (n = read(pipe_fds[0], buffer, sizeof buffer)) > 0;)
    printed.append(buffer, size_t(n));
  close(pipe_fds[0]);
  int status = 0;
  waitpid(child, &status, 0);
  return {WIFSIGNALED(status) ? WTERMSIG(status) : 0, printed};
}

}  // namespace

TEST_CASE("a block reduction through shared memory and barriers") {
  std::vector<int> in(3 * kThreads);
  for (size_t i = 0; i < in.size(); ++i) in[i] = int(i);
  const auto d_in = device_copy(in);
  const auto d_out = device_copy(std::vector<int>(3));
  tree_sum<<<3, kThreads, 0, nullptr>>>(d_in.get(), d_out.get());
  CHECK(cudaGetLastError() == cudaSuccess);
  // Block b sums 128 b .. 128 b + 127.
  CHECK(host_copy(d_out, 3) == std::vector<int>{8128, 24512, 40896});
}

TEST_CASE("warp shuffles within segments of their width") {
  std::vector<int> in(64);
  for (int i = 0; i < 64; ++i) in[i] = i;
  const auto d_in = device_copy(in);
  const auto d_out = device_copy(std::vector<int>(64));
  for (int width : {32, 8}) {
    CAPTURE(width);
    shuffle_sums<<<1, 64, 0, nullptr>>>(d_in.get(), d_out.get(), width);
    const auto out = host_copy(d_out, 64);
    // The first lane of each segment holds the segment's sum.
    for (int first = 0; first < 64; first += width) {
      int sum = 0;
      for (int i = first; i < first + width; ++i) sum += i;
      CHECK(out[first] == sum);
    }
  }
}

TEST_CASE("CUB's BlockReduce leaves the result in thread 0") {
  std::vector<double> in(kThreads);
  for (int i = 0; i < kThreads; ++i) in[i] = std::sin(i);
  const auto d_in = device_copy(in);
  const auto d_out = device_copy(std::vector<double>(1));
  block_reduce_max<<<1, kThreads, 0, nullptr>>>(d_in.get(), d_out.get());
  double expect = in[0];
  for (double v : in) expect = v > expect ? v : expect;
  CHECK(host_copy(d_out, 1)[0] == expect);
}

// The race check aborts on this kernel: its case is below.
TEST_CASE("a missing barrier reads a stale value in one of the two orders" *
          doctest::skip(kRaceChecked)) {
  const auto d_out = device_copy(std::vector<int>(kThreads, -1));
  unsynchronized_neighbour<<<1, kThreads, 0, nullptr>>>(d_out.get());
  const auto out = host_copy(d_out, kThreads);
  // Forward: thread 0 reads slot 1 before thread 1 writes it (a 0xff fill
  // or a previous block's value); reverse: after.
  CHECK((out[0] == 1) == reverse_order());
}

TEST_CASE("device memory starts as 0xff bytes; launches a GPU refuses fail") {
  CHECK(std::isnan(host_copy(device_array<float>(4), 4)[3]));
  nothing<<<1, 2048, 0, nullptr>>>();
  CHECK(cudaGetLastError() == cudaErrorInvalidConfiguration);
  nothing<<<dim3(1, 70000), 32, 0, nullptr>>>();
  CHECK(cudaGetLastError() == cudaErrorInvalidConfiguration);
  nothing<<<1, 32, 0, nullptr>>>();
  CHECK(cudaGetLastError() == cudaSuccess);
}

TEST_CASE("what a GPU hangs on or leaves undefined aborts, naming the launch") {
  const auto d_out = device_copy(std::vector<int>(32));
  const auto deadlock = in_child(
      [&] { shuffle_against_barrier<<<1, 32, 0, nullptr>>>(d_out.get()); });
  CHECK(deadlock.first == SIGABRT);
  CHECK(deadlock.second.find("a barrier or shuffle that a thread it waits "
                             "for never reaches") != std::string::npos);
  CHECK(deadlock.second.find("self_test.cu:") != std::string::npos);
  const auto shuffle =
      in_child([&] { shuffle_half_warp<<<1, 32, 0, nullptr>>>(d_out.get()); });
  CHECK(shuffle.first == SIGABRT);
  CHECK(shuffle.second.find("names a lane that has exited") !=
        std::string::npos);
  const auto trap = in_child([] { traps<<<1, 8, 0, nullptr>>>(); });
  CHECK(trap.first == SIGABRT);
  CHECK(trap.second.find("__trap()") != std::string::npos);
}

TEST_CASE("an access past device memory or a thread's locals aborts" *
          doctest::skip(!kAddressChecked)) {
  const auto d_out = device_copy(std::vector<int>(32));
  // Device memory is allocated to the byte: one int past 32 is out.
  write_at<<<1, 1, 0, nullptr>>>(d_out.get(), 31);
  const auto past =
      in_child([&] { write_at<<<1, 1, 0, nullptr>>>(d_out.get(), 32); });
  CHECK(past.first == SIGABRT);
  CHECK(past.second.find("heap-buffer-overflow") != std::string::npos);
  CHECK(past.second.find("cuda emulator: an invalid memory access (reported "
                         "above) in the kernel launched at") !=
        std::string::npos);
  CHECK(past.second.find("self_test.cu:") != std::string::npos);
  // And a thread's locals, on its fiber's stack.
  local_at<<<1, 32, 0, nullptr>>>(d_out.get(), 3);
  const auto local =
      in_child([&] { local_at<<<1, 32, 0, nullptr>>>(d_out.get(), 4); });
  CHECK(local.first == SIGABRT);
  CHECK(local.second.find("stack-buffer-overflow") != std::string::npos);
  CHECK(local.second.find("in the kernel launched at") != std::string::npos);
}

TEST_CASE("barriers, whole-warp shuffles and atomics order what they should") {
  const auto d_counter = device_copy(std::vector<int>{0});
  count_atomically<<<3, kThreads, 0, nullptr>>>(d_counter.get());
  CHECK(host_copy(d_counter, 1)[0] == 3 * kThreads);
  std::vector<double> in(kThreads);
  for (int i = 0; i < kThreads; ++i) in[i] = i;
  const auto d_in = device_copy(in);
  const auto d_sum = device_copy(std::vector<double>(1));
  block_reduce_twice<<<1, kThreads, 0, nullptr>>>(d_in.get(), d_sum.get(),
                                                  true);
  CHECK(host_copy(d_sum, 1)[0] == 3 * (kThreads - 1) * kThreads / 2);
  const auto d_out = device_copy(std::vector<int>(64));
  warp_neighbour<<<1, 64, 0, nullptr>>>(d_out.get(), true);
  const auto out = host_copy(d_out, 64);
  for (int t = 0; t < 64; ++t) CHECK(out[t] == ((t & ~31) | ((t + 1) & 31)));
  const auto d_flag = device_copy(std::vector<int>{0});
  volatile_flag<<<1, 32, 0, nullptr>>>(d_flag.get(), d_out.get());
  CHECK(host_copy(d_out, 1)[0] == 1);
}

// Each faulty kernel in a child process, which must abort with the race
// check's report: the launch, then both accesses with their lines.
TEST_CASE("the race check reports a race's two accesses" *
          doctest::skip(!kRaceChecked)) {
  const auto report = [](const char* name, auto launch,
                         std::vector<std::string> expected) {
    CAPTURE(name);
    const auto [signal, printed] = in_child(launch);
    CAPTURE(printed);
    CHECK(signal == SIGABRT);
    expected.push_back("in the kernel launched at ");
    expected.push_back("self_test.cu:");
    expected.push_back("\n  after thread ");
    for (const std::string& text : expected)
      CHECK(printed.find(text) != std::string::npos);
    // Both accesses are placed on a line of a CUDA source.
    const std::string at = "\n    at ";
    size_t placed = 0;
    for (size_t i = printed.find(at); i != std::string::npos;
         i = printed.find(at, i + 1)) {
      const std::string place = printed.substr(
          i + at.size(), printed.find('\n', i + 1) - i - at.size());
      placed += place.find(".cu:") != std::string::npos ||
                place.find(".cuh:") != std::string::npos;
    }
    CHECK(placed == 2);
  };
  const auto d_out = device_copy(std::vector<int>(kThreads));
  const auto d_in = device_copy(std::vector<int>(kThreads, 1));
  const auto d_doubles = device_copy(std::vector<double>(kThreads, 1.0));
  const auto d_sum = device_copy(std::vector<double>(1));
  const std::string same_block = "of the same block";
  const std::string no_barrier =
      "no __syncthreads (or, within a warp, "
      "whole-warp shuffle) between";
  report("neighbour",
         [&] {
           unsynchronized_neighbour<<<1, kThreads, 0, nullptr>>>(d_out.get());
         },
         {"a data race on shared memory", same_block, no_barrier});
  report("tree",
         [&] {
           tree_sum_unsynchronized<<<1, kThreads, 0, nullptr>>>(d_in.get(),
                                                                d_out.get());
         },
         {"a data race on shared memory", same_block, no_barrier});
  report("plain counter",
         [&] { count_plainly<<<1, 2, 0, nullptr>>>(d_out.get()); },
         {"a data race on device memory", "of block (0, 0, 0) reads 4 bytes",
          "of the same block wrote them"});
  report(
      "atomic then plain",
      [&] { count_then_read<<<1, 2, 0, nullptr>>>(d_in.get(), d_out.get()); },
      {"a data race on device memory", "atomically writes 4 bytes",
       "of the same block read them"});
  report("blocks",
         [&] { every_block_writes<<<2, 32, 0, nullptr>>>(d_out.get()); },
         {"a data race on device memory", "of block (1, 0, 0) writes 4 bytes",
          "after thread (0, 0, 0) of block (0, 0, 0) wrote them",
          "blocks of one launch are unordered"});
  report("BlockReduce",
         [&] {
           block_reduce_twice<<<1, kThreads, 0, nullptr>>>(d_doubles.get(),
                                                           d_sum.get(), false);
         },
         {"a data race on shared memory", "block_reduce.cuh:", same_block});
  report("warp",
         [&] { warp_neighbour<<<1, 64, 0, nullptr>>>(d_out.get(), false); },
         {"a data race on shared memory", same_block});
}
