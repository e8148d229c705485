#pragma once
// TensorFlow's TF_GPU_ALLOCATOR=cuda_malloc: each request its own segment
// from the device, returned as soon as it is freed, nothing cached. It is
// slow (cudaFree waits for the device) and meant for debugging: each tensor
// ends where its bytes end, so compute-sanitizer's memcheck on a GPU, and
// AddressSanitizer under the CUDA emulator (tools/cuda_emu), fault an access
// past it, where the BFC arena's neighbouring chunk would have taken it
// silently. The memory limit holds on the bytes in use. Thread-safe.
#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "core/bfc_arena.hpp"

namespace tapeflow {

class UncachedAllocator final : public Allocator {
 public:
  UncachedAllocator(std::unique_ptr<SegmentSource> source,
                    const config::GpuMemoryOptions& options);
  ~UncachedAllocator() override;

  void* allocate(size_t nbytes) override;
  void deallocate(void* p, size_t nbytes) override;
  MemoryStats stats() const override;
  /** Nothing is cached. */
  void empty_cache() override {}

  size_t limit_bytes() const { return limit_; }

 private:
  std::string out_of_memory(size_t size) const;

  std::unique_ptr<SegmentSource> source_;
  size_t limit_ = 0;
  std::string limit_origin_;
  mutable std::mutex mu_;
  std::unordered_map<void*, size_t> live_;  // address -> bytes
  MemoryStats stats_;
};

}  // namespace tapeflow
