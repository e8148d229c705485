// One DeferredErrorRecord per device in mapped pinned memory: kernels write
// it through its device pointer, the host reads it after a stream sync with
// no copy. Beside it a claim flag in the device's memory, which the first
// reporting thread takes. Allocated on first use and leaked, like the
// streams.
#include <array>
#include <atomic>
#include <mutex>
#include <new>
#include <string>

#include "check.hpp"
#include "context.hpp"
#include "deferred_error.hpp"

namespace tapeflow::cuda {
namespace {

constexpr int kMaxDevices = 64;

struct Records {
  // atomic: raise_deferred_errors reads it without the once_flag
  std::array<std::atomic<DeferredErrorRecord*>, kMaxDevices> host{};
  std::array<DeferredErrorRecord*, kMaxDevices> device{};
  std::array<unsigned int*, kMaxDevices> flag{};  // set before `host`
  std::array<std::once_flag, kMaxDevices> created;
  DeferredOpNames names;
};

Records& records() {
  static auto* r = new Records;  // leaked: kernels may hold its pointers
  return *r;
}

/** Device `device`'s record and flag, allocated on first use. */
Records& device_records(int device) {
  // Validates the index and makes the device current.
  const cudaStream_t stream = activate(device);
  Records& r = records();
  std::call_once(r.created[device], [&] {
    void* flag = nullptr;
    TAPEFLOW_CUDA_CHECK(cudaMalloc(&flag, sizeof(unsigned int)));
    // On the stream, so before any kernel that is handed the flag.
    TAPEFLOW_CUDA_CHECK(cudaMemsetAsync(flag, 0, sizeof(unsigned int), stream));
    r.flag[device] = static_cast<unsigned int*>(flag);
    void* host = nullptr;
    TAPEFLOW_CUDA_CHECK(
        cudaHostAlloc(&host, sizeof(DeferredErrorRecord), cudaHostAllocMapped));
    void* dev = nullptr;
    TAPEFLOW_CUDA_CHECK(cudaHostGetDevicePointer(&dev, host, 0));
    r.device[device] = static_cast<DeferredErrorRecord*>(dev);
    r.host[device].store(new (host) DeferredErrorRecord{});
  });
  return r;
}

}  // namespace

DeferredIndexCheck deferred_index_check(int device, std::string_view op,
                                        int64_t lo, int64_t hi) {
  Records& r = device_records(device);
  return {r.device[device], r.flag[device], r.names.id(op), lo, hi};
}

void raise_deferred_errors(int device) {
  if (device < 0 || device >= kMaxDevices) return;
  Records& r = records();
  // No record yet means no kernel was handed a check on this device.
  DeferredErrorRecord* host = r.host[device].load();
  if (host == nullptr) return;
  raise_deferred_error(*host, r.names, "cuda:" + std::to_string(device), [&] {
    // On the stream: kernels queued from now on may claim it again.
    TAPEFLOW_CUDA_CHECK(cudaMemsetAsync(r.flag[device], 0, sizeof(unsigned int),
                                        activate(device)));
  });
}

}  // namespace tapeflow::cuda
