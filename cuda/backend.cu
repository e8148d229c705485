// The CUDA device backend: a caching allocator per GPU and host copies.
#include <array>
#include <memory>
#include <mutex>
#include <vector>

#include "check.hpp"
#include "core/registry.hpp"
#include "core/size_class.hpp"

namespace tapeflow::cuda {
namespace {

/** Device memory cached by size class; cudaMalloc/cudaFree synchronize. */
class CudaAllocator final : public Allocator {
 public:
  explicit CudaAllocator(int device) : device_(device) {}

  void* allocate(size_t nbytes) override {
    const SizeClass cls = size_class(nbytes);
    {
      std::lock_guard lock(mu_);
      ++stats_.num_allocs;
      auto& blocks = free_[cls.index];
      if (!blocks.empty()) {
        void* p = blocks.back();
        blocks.pop_back();
        stats_.cached_bytes -= cls.bytes;
        note_allocated(cls.bytes);
        return p;
      }
      ++stats_.num_fresh;
    }
    TAPEFLOW_CUDA_CHECK(cudaSetDevice(device_));
    void* p = nullptr;
    if (cudaMalloc(&p, cls.bytes) != cudaSuccess) {
      cudaGetLastError();  // clear, release the cache and try once more
      empty_cache();
      TAPEFLOW_CUDA_CHECK(cudaMalloc(&p, cls.bytes));
    }
    std::lock_guard lock(mu_);
    note_allocated(cls.bytes);
    return p;
  }

  void deallocate(void* p, size_t nbytes) override {
    const SizeClass cls = size_class(nbytes);
    std::lock_guard lock(mu_);
    free_[cls.index].push_back(p);
    stats_.allocated_bytes -= cls.bytes;
    stats_.cached_bytes += cls.bytes;
  }

  MemoryStats stats() const override {
    std::lock_guard lock(mu_);
    return stats_;
  }

  void empty_cache() override {
    std::lock_guard lock(mu_);
    cudaSetDevice(device_);
    for (auto& blocks : free_) {
      for (void* p : blocks) cudaFree(p);
      blocks.clear();
    }
    stats_.cached_bytes = 0;
  }

 private:
  void note_allocated(size_t bytes) {
    stats_.allocated_bytes += bytes;
    stats_.peak_bytes = std::max(stats_.peak_bytes, stats_.allocated_bytes);
  }

  int device_;
  mutable std::mutex mu_;
  std::array<std::vector<void*>, kNumSizeClasses> free_;
  MemoryStats stats_;
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
