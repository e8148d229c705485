// The CUDA device backend: an arena per GPU (src/core/device_arena.hpp),
// copies through pinned staging and peer copies, and synchronization, all
// on each device's one stream (context.hpp).
#include <iostream>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "check.hpp"
#include "context.hpp"
#include "core/device_arena.hpp"
#include "core/device_init_line.hpp"
#include "core/pinned_staging.hpp"
#include "core/registry.hpp"
#include "deferred_error.hpp"
#include "pinned_source.hpp"

namespace tapeflow::cuda {
namespace {

/** One GPU's memory for its arena: cudaMalloc'd segments. */
class CudaSegments final : public SegmentSource {
 public:
  explicit CudaSegments(int device) : device_(device) {}
  void* allocate(size_t bytes) override {
    activate(device_);
    void* p = nullptr;
    if (cudaMalloc(&p, bytes) != cudaSuccess) {
      cudaGetLastError();  // out of memory is an answer, not a sticky error
      return nullptr;
    }
    return p;
  }
  /** Frees run in destructors: nothing here throws, and the thread's
   * current device is left as it was. */
  void release(void* p, size_t) override {
    int current = -1;
    const bool switched = cudaGetDevice(&current) == cudaSuccess &&
                          current != device_ &&
                          cudaSetDevice(device_) == cudaSuccess;
    cudaFree(p);
    if (switched) cudaSetDevice(current);
  }
  size_t total_bytes() const override { return mem_info().second; }
  size_t free_bytes() const override { return mem_info().first; }
  /** Before the arena frees segments: every chunk's last use is done. */
  void synchronize() override {
    TAPEFLOW_CUDA_CHECK(cudaStreamSynchronize(activate(device_)));
  }
  std::string device_name() const override {
    return "cuda:" + std::to_string(device_);
  }

 private:
  std::pair<size_t, size_t> mem_info() const {
    activate(device_);
    size_t free = 0, total = 0;
    TAPEFLOW_CUDA_CHECK(cudaMemGetInfo(&free, &total));
    return {free, total};
  }

  int device_;
};

/** The placement log's line for `device` once its allocator exists. */
void log_device_init(int device, const DeviceMemoryPolicy& policy) {
  if (!placement_logging_enabled()) return;
  cudaDeviceProp prop{};
  TAPEFLOW_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  const GpuDescription gpu{"cuda:" + std::to_string(device), prop.name,
                           prop.major, prop.minor, prop.totalGlobalMem};
  std::cerr << device_init_line(gpu, policy.limit_bytes, policy.allow_growth,
                                policy.options)
            << "\n";
}

/** A cudaEventDisableTiming event of `device`, recorded on its stream. */
cudaEvent_t record_on(int device) {
  const cudaStream_t stream = activate(device);
  cudaEvent_t e = nullptr;
  TAPEFLOW_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  TAPEFLOW_CUDA_CHECK(cudaEventRecord(e, stream));
  return e;
}

class CudaBackend final : public DeviceBackend {
 public:
  CudaBackend() : staging_(make_pinned_source()) {
    // No driver or no GPU (cudaErrorInsufficientDriver, ...) means 0 devices.
    if (cudaGetDeviceCount(&count_) != cudaSuccess) {
      cudaGetLastError();
      count_ = 0;
    }
    for (int i = 0; i < count_; ++i)
      allocators_.push_back(std::make_unique<DeviceArena>(
          [i] { return std::make_unique<CudaSegments>(i); },
          [i](const DeviceMemoryPolicy& policy) {
            log_device_init(i, policy);
          }));
  }
  const char* name() const override { return "cuda"; }
  int device_count() const override { return count_; }
  Allocator* allocator(int index) override { return allocators_[index].get(); }
  /** A sync point: the event wait covers every kernel queued before it. */
  void copy_to_host(const void* src, void* dst, size_t bytes,
                    int index) override {
    // Current first: a staging block's cudaHostAlloc runs in the current
    // device's context, and a thread's first CUDA call would make it GPU 0's
    // (a context on a GPU the process may not use).
    activate(index);
    staging_.to_host(src, dst, bytes, index);
    raise_deferred_errors(index);
  }
  void copy_from_host(const void* src, void* dst, size_t bytes,
                      int index) override {
    activate(index);  // as copy_to_host
    staging_.to_device(src, dst, bytes, index);
  }
  void copy_between_devices(const void* src, int src_index, void* dst,
                            int dst_index, size_t bytes) override {
    if (src_index == dst_index) {
      TAPEFLOW_CUDA_CHECK(cudaMemcpyAsync(
          dst, src, bytes, cudaMemcpyDeviceToDevice, activate(dst_index)));
      return;
    }
    // On the destination's stream, after the source's producers; and the
    // source's stream waits for the copy before it may reuse the source's
    // memory (its arena reuses chunks in that stream's order).
    const cudaEvent_t produced = record_on(src_index);
    const cudaStream_t dst_stream = activate(dst_index);
    TAPEFLOW_CUDA_CHECK(cudaStreamWaitEvent(dst_stream, produced, 0));
    TAPEFLOW_CUDA_CHECK(
        cudaMemcpyPeerAsync(dst, dst_index, src, src_index, bytes, dst_stream));
    const cudaEvent_t copied = record_on(dst_index);
    TAPEFLOW_CUDA_CHECK(cudaStreamWaitEvent(activate(src_index), copied, 0));
    // Destroying a pending event is allowed: it is freed once it fires.
    cudaEventDestroy(produced);
    cudaEventDestroy(copied);
  }
  void synchronize(int index) override {
    TAPEFLOW_CUDA_CHECK(cudaStreamSynchronize(activate(index)));
    raise_deferred_errors(index);
  }
  void wait_idle(int index) override {
    TAPEFLOW_CUDA_CHECK(cudaStreamSynchronize(activate(index)));
  }
  void* native_stream(int index) override { return activate(index); }

 private:
  int count_ = 0;
  std::vector<std::unique_ptr<DeviceArena>> allocators_;
  PinnedStaging staging_;
};

}  // namespace

void register_elementwise(Registry& r);
void register_reduce(Registry& r);
void register_matmul(Registry& r);
void register_random(Registry& r);
void register_pool(Registry& r);
void register_norm(Registry& r);
void register_losses(Registry& r);
void register_optim_updates(Registry& r);
void register_index(Registry& r);
void register_arg_reduce(Registry& r);
void register_scan(Registry& r);
void register_sort(Registry& r);
void register_linalg(Registry& r);
void register_fractional_pool(Registry& r);
void register_conv(Registry& r);
void register_lstm_cell(Registry& r);

}  // namespace tapeflow::cuda

/** Entry point the core calls after dlopen; kernels only where a GPU is. */
extern "C" void tapeflow_register_cuda(tapeflow::Registry* r) {
  // Leaked, never destroyed: at exit, tensors still alive (statics, other
  // threads) free into its arenas, and the driver may already be torn down.
  static auto* backend = new tapeflow::cuda::CudaBackend;
  r->set_backend(tapeflow::DeviceType::cuda, backend);
  if (backend->device_count() == 0) return;
  tapeflow::cuda::register_elementwise(*r);
  tapeflow::cuda::register_reduce(*r);
  tapeflow::cuda::register_matmul(*r);
  tapeflow::cuda::register_random(*r);
  tapeflow::cuda::register_pool(*r);
  tapeflow::cuda::register_norm(*r);
  tapeflow::cuda::register_losses(*r);
  tapeflow::cuda::register_optim_updates(*r);
  tapeflow::cuda::register_index(*r);
  tapeflow::cuda::register_arg_reduce(*r);
  tapeflow::cuda::register_scan(*r);
  tapeflow::cuda::register_sort(*r);
  tapeflow::cuda::register_linalg(*r);
  tapeflow::cuda::register_fractional_pool(*r);
  tapeflow::cuda::register_conv(*r);
  tapeflow::cuda::register_lstm_cell(*r);
}
