// The CUDA device backend: a caching allocator per GPU and host copies.
#include <memory>
#include <vector>

#include "check.hpp"
#include "core/block_cache.hpp"
#include "core/registry.hpp"

namespace tapeflow::cuda {
namespace {

/** Device memory cached by size class; cudaMalloc/cudaFree synchronize. */
class CudaAllocator final : public Allocator {
 public:
  explicit CudaAllocator(int device) : device_(device) {}

  void* allocate(size_t nbytes) override {
    const SizeClass cls = size_class(nbytes);
    if (void* p = cache_.take(cls)) return p;
    TAPEFLOW_CUDA_CHECK(cudaSetDevice(device_));
    void* p = nullptr;
    if (cudaMalloc(&p, cls.bytes) != cudaSuccess) {
      cudaGetLastError();  // clear, release the cache and try once more
      empty_cache();
      if (cudaMalloc(&p, cls.bytes) != cudaSuccess) {
        cudaGetLastError();
        cache_.cancel(cls);
        const MemoryStats s = cache_.stats();
        throw DeviceError("[allocate] expected " + std::to_string(cls.bytes) +
                          " bytes on cuda:" + std::to_string(device_) +
                          ", got out of memory (" +
                          std::to_string(s.allocated_bytes) + " bytes in use)");
      }
    }
    return p;
  }
  void deallocate(void* p, size_t nbytes) override {
    cache_.put(p, size_class(nbytes));
  }
  MemoryStats stats() const override { return cache_.stats(); }
  void empty_cache() override {
    cudaSetDevice(device_);
    cache_.drain([](void* p) { cudaFree(p); });
  }

 private:
  int device_;
  BlockCache cache_;
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
      allocators_.push_back(std::make_unique<CudaAllocator>(i));
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

 private:
  int count_ = 0;
  std::vector<std::unique_ptr<CudaAllocator>> allocators_;
};

}  // namespace

void register_elementwise(Registry& r);
void register_reduce(Registry& r);
void register_matmul(Registry& r);

}  // namespace tapeflow::cuda

/** Entry point the core calls after dlopen; kernels only where a GPU is. */
extern "C" void tapeflow_register_cuda(tapeflow::Registry* r) {
  static tapeflow::cuda::CudaBackend backend;
  r->set_backend(tapeflow::DeviceType::cuda, &backend);
  if (backend.device_count() == 0) return;
  tapeflow::cuda::register_elementwise(*r);
  tapeflow::cuda::register_reduce(*r);
  tapeflow::cuda::register_matmul(*r);
}
