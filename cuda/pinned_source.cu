#include "check.hpp"
#include "context.hpp"
#include "pinned_source.hpp"

namespace tapeflow::cuda {
namespace {

class PinnedSource final : public StagingSource {
 public:
  void* allocate(size_t bytes) override {
    void* p = nullptr;
    // Portable: pinned for every device's context, not only the current
    // one, so one cache serves all GPUs.
    TAPEFLOW_CUDA_CHECK(cudaHostAlloc(&p, bytes, cudaHostAllocPortable));
    return p;
  }
  void release(void* block, size_t) override { cudaFreeHost(block); }
  Event create_event(int device) override {
    activate(device);  // an event belongs to the device current at creation
    cudaEvent_t e = nullptr;
    TAPEFLOW_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    return e;
  }
  void destroy_event(Event event, int) override {
    cudaEventDestroy(static_cast<cudaEvent_t>(event));
  }
  void record(Event event, int device) override {
    TAPEFLOW_CUDA_CHECK(
        cudaEventRecord(static_cast<cudaEvent_t>(event), activate(device)));
  }
  bool done(Event event) override {
    const cudaError_t status = cudaEventQuery(static_cast<cudaEvent_t>(event));
    if (status == cudaErrorNotReady) {
      cudaGetLastError();  // "not ready" is an answer, not an error
      return false;
    }
    TAPEFLOW_CUDA_CHECK(status);
    return true;
  }
  void wait(Event event) override {
    TAPEFLOW_CUDA_CHECK(cudaEventSynchronize(static_cast<cudaEvent_t>(event)));
  }
  void copy_to_device_async(const void* pinned, void* device_dst, size_t bytes,
                            int device) override {
    TAPEFLOW_CUDA_CHECK(cudaMemcpyAsync(
        device_dst, pinned, bytes, cudaMemcpyHostToDevice, activate(device)));
  }
  void copy_to_host_async(const void* device_src, void* pinned, size_t bytes,
                          int device) override {
    TAPEFLOW_CUDA_CHECK(cudaMemcpyAsync(
        pinned, device_src, bytes, cudaMemcpyDeviceToHost, activate(device)));
  }
};

}  // namespace

std::unique_ptr<StagingSource> make_pinned_source() {
  return std::make_unique<PinnedSource>();
}

}  // namespace tapeflow::cuda
