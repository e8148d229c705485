// The CUDA device backend: a BFC arena per GPU (src/core/bfc_arena.hpp) and
// host copies.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "check.hpp"
#include "core/bfc_arena.hpp"
#include "core/registry.hpp"

namespace tapeflow::cuda {
namespace {

/** One GPU's memory for its arena: cudaMalloc'd segments. */
class CudaSegments final : public SegmentSource {
 public:
  explicit CudaSegments(int device) : device_(device) {}
  void* allocate(size_t bytes) override {
    TAPEFLOW_CUDA_CHECK(cudaSetDevice(device_));
    void* p = nullptr;
    if (cudaMalloc(&p, bytes) != cudaSuccess) {
      cudaGetLastError();  // out of memory is an answer, not a sticky error
      return nullptr;
    }
    return p;
  }
  void release(void* p, size_t) override {
    cudaSetDevice(device_);
    cudaFree(p);
  }
  size_t total_bytes() const override { return mem_info().second; }
  size_t free_bytes() const override { return mem_info().first; }
  void synchronize() override {
    TAPEFLOW_CUDA_CHECK(cudaSetDevice(device_));
    TAPEFLOW_CUDA_CHECK(cudaDeviceSynchronize());
  }
  std::string device_name() const override {
    return "cuda:" + std::to_string(device_);
  }

 private:
  std::pair<size_t, size_t> mem_info() const {
    TAPEFLOW_CUDA_CHECK(cudaSetDevice(device_));
    size_t free = 0, total = 0;
    TAPEFLOW_CUDA_CHECK(cudaMemGetInfo(&free, &total));
    return {free, total};
  }

  int device_;
};

class CudaBackend final : public DeviceBackend {
 public:
  CudaBackend() {
    // No driver or no GPU (cudaErrorInsufficientDriver, ...) means 0 devices.
    if (cudaGetDeviceCount(&count_) != cudaSuccess) {
      cudaGetLastError();
      count_ = 0;
    }
    for (int i = 0; i < count_; ++i)
      allocators_.push_back(std::make_unique<DeviceArena>(
          [i] { return std::make_unique<CudaSegments>(i); }));
  }
  const char* name() const override { return "cuda"; }
  int device_count() const override { return count_; }
  Allocator* allocator(int index) override { return allocators_[index].get(); }
  void copy_to_host(const void* src, void* dst, size_t bytes,
                    int index) override {
    TAPEFLOW_CUDA_CHECK(cudaSetDevice(index));
    TAPEFLOW_CUDA_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost));
  }
  void copy_from_host(const void* src, void* dst, size_t bytes,
                      int index) override {
    TAPEFLOW_CUDA_CHECK(cudaSetDevice(index));
    TAPEFLOW_CUDA_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice));
  }
  void synchronize(int index) override {
    TAPEFLOW_CUDA_CHECK(cudaSetDevice(index));
    TAPEFLOW_CUDA_CHECK(cudaDeviceSynchronize());
  }

 private:
  int count_ = 0;
  std::vector<std::unique_ptr<DeviceArena>> allocators_;
};

}  // namespace

void register_elementwise(Registry& r);
void register_reduce(Registry& r);
void register_matmul(Registry& r);
void register_random(Registry& r);

}  // namespace tapeflow::cuda

/** Entry point the core calls after dlopen; kernels only where a GPU is. */
extern "C" void tapeflow_register_cuda(tapeflow::Registry* r) {
  static tapeflow::cuda::CudaBackend backend;
  r->set_backend(tapeflow::DeviceType::cuda, &backend);
  if (backend.device_count() == 0) return;
  tapeflow::cuda::register_elementwise(*r);
  tapeflow::cuda::register_reduce(*r);
  tapeflow::cuda::register_matmul(*r);
  tapeflow::cuda::register_random(*r);
}
