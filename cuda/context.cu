// The per-device streams and cuBLAS handles: created on first use and never
// destroyed (the backend lives until the process ends; destroying a stream
// or handle during static destruction would race the driver's own
// teardown).
#include <array>
#include <mutex>
#include <vector>

#include "check.hpp"
#include "context.hpp"
#include "core/device_backend.hpp"

namespace tapeflow::cuda {
namespace {

constexpr int kMaxDevices = 64;

struct Streams {
  std::array<cudaStream_t, kMaxDevices> stream{};
  std::array<std::once_flag, kMaxDevices> created;
};

Streams& streams() {
  static auto* s = new Streams;  // leaked on purpose: see the file comment
  return *s;
}

/**
 * cuBLAS handles no thread holds, per device. A thread takes one on its
 * first cuBLAS call and gives it back when it exits, so a program that
 * starts threads again and again reuses a few handles (PyTorch's
 * DeviceThreadHandlePool). All handles of a device share its stream, which
 * runs one kernel at a time, so they share one workspace too.
 */
struct HandlePool {
  std::mutex mutex;
  std::array<std::vector<cublasHandle_t>, kMaxDevices> idle;
  std::array<void*, kMaxDevices> workspace{};
  std::array<size_t, kMaxDevices> workspace_bytes{};
};

HandlePool& handle_pool() {
  static auto* p = new HandlePool;  // leaked on purpose: see the file comment
  return *p;
}

/** sm_90 and newer want a 32 MiB workspace, older GPUs 4 MiB (pytorch#120925).
 */
size_t workspace_bytes(int device) {
  int major = 0;
  TAPEFLOW_CUDA_CHECK(cudaDeviceGetAttribute(
      &major, cudaDevAttrComputeCapabilityMajor, device));
  return size_t(major >= 9 ? 32 : 4) << 20;
}

/** A handle for `device` (current), from the pool or new; pool locked. */
cublasHandle_t take_handle(HandlePool& pool, int device, cudaStream_t stream) {
  std::vector<cublasHandle_t>& idle = pool.idle[device];
  if (!idle.empty()) {
    cublasHandle_t h = idle.back();
    idle.pop_back();
    return h;
  }
  if (pool.workspace[device] == nullptr) {
    // From the arena, so it counts against the memory limit; held for good.
    const size_t bytes = workspace_bytes(device);
    pool.workspace[device] =
        device_backend(DeviceType::cuda)->allocator(device)->allocate(bytes);
    pool.workspace_bytes[device] = bytes;
  }
  cublasHandle_t h = nullptr;
  TAPEFLOW_CUDA_CHECK(cublasCreate(&h));
  // cublasSetStream resets the workspace, so the workspace goes second.
  TAPEFLOW_CUDA_CHECK(cublasSetStream(h, stream));
  TAPEFLOW_CUDA_CHECK(cublasSetWorkspace(h, pool.workspace[device],
                                         pool.workspace_bytes[device]));
  return h;
}

/** This thread's handles; returned to the pool when the thread ends. */
struct ThreadHandles {
  std::array<cublasHandle_t, kMaxDevices> handle{};
  ~ThreadHandles() {
    HandlePool& pool = handle_pool();
    std::lock_guard lock(pool.mutex);
    for (int d = 0; d < kMaxDevices; ++d)
      if (handle[d]) pool.idle[d].push_back(handle[d]);
  }
};

}  // namespace

cudaStream_t activate(int device) {
  if (device < 0 || device >= kMaxDevices)
    throw DeviceError("[cuda] expected a device index in [0, " +
                      std::to_string(kMaxDevices) + "), got " +
                      std::to_string(device));
  // Asks the runtime rather than caching the device in a thread_local: code
  // outside tapeflow (or NCCL) may call cudaSetDevice, and a launch on
  // another device's stream fails. cudaGetDevice reads a thread-local.
  int current = -1;
  TAPEFLOW_CUDA_CHECK(cudaGetDevice(&current));
  if (current != device) TAPEFLOW_CUDA_CHECK(cudaSetDevice(device));
  Streams& s = streams();
  std::call_once(s.created[device], [&] {
    TAPEFLOW_CUDA_CHECK(
        cudaStreamCreateWithFlags(&s.stream[device], cudaStreamNonBlocking));
  });
  return s.stream[device];
}

cublasHandle_t cublas(int device) {
  const cudaStream_t stream = activate(device);
  thread_local ThreadHandles mine;
  if (!mine.handle[device]) {
    HandlePool& pool = handle_pool();
    std::lock_guard lock(pool.mutex);
    mine.handle[device] = take_handle(pool, device, stream);
  }
  return mine.handle[device];
}

}  // namespace tapeflow::cuda
