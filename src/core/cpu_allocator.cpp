#include "core/cpu_allocator.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <bit>
#include <cstdlib>
#include <mutex>
#include <new>
#include <unordered_map>
#include <vector>

#include "tapeflow/core/error.hpp"
#include "tapeflow/memory.hpp"

namespace tapeflow {
namespace {

constexpr size_t kAlignment = 64;
constexpr size_t kHugePage = size_t{2} << 20;

// Four classes per power of two: at most 25% of a block is slack.
size_t size_class(size_t n) {
  if (n <= kAlignment) return kAlignment;
  const size_t top = std::bit_floor(n - 1);
  const size_t step = std::max(kAlignment, top / 4);
  return (n + step - 1) / step * step;
}

/**
 * Keeps freed blocks by size class instead of returning them: a fresh page
 * costs ~12 us to fault in on these VMs, so a training loop that gave its
 * activations back to the OS every step would spend most of its time there.
 */
class CachingCpuAllocator final : public Allocator {
 public:
  void* allocate(size_t nbytes) override {
    const size_t cls = size_class(nbytes);
    {
      std::lock_guard lock(mu_);
      ++stats_.num_allocs;
      auto it = free_.find(cls);
      if (it != free_.end() && !it->second.empty()) {
        void* p = it->second.back();
        it->second.pop_back();
        stats_.cached_bytes -= cls;
        note_allocated(cls);
        return p;
      }
      ++stats_.num_fresh;
      note_allocated(cls);
    }
    return fresh(cls);
  }

  void deallocate(void* p, size_t nbytes) override {
    const size_t cls = size_class(nbytes);
    std::lock_guard lock(mu_);
    free_[cls].push_back(p);
    stats_.allocated_bytes -= cls;
    stats_.cached_bytes += cls;
  }

  MemoryStats stats() const override {
    std::lock_guard lock(mu_);
    return stats_;
  }

  void empty_cache() override {
    std::lock_guard lock(mu_);
    for (auto& [cls, blocks] : free_)
      for (void* p : blocks) std::free(p);
    free_.clear();
    stats_.cached_bytes = 0;
  }

 private:
  void note_allocated(size_t cls) {
    stats_.allocated_bytes += cls;
    stats_.peak_bytes = std::max(stats_.peak_bytes, stats_.allocated_bytes);
  }

  static void* fresh(size_t cls) {
    // Large blocks are 2 MiB aligned and asked for as huge pages: one fault
    // per 2 MiB instead of 512.
    const bool huge = cls >= 2 * kHugePage;
    const size_t align = huge ? kHugePage : kAlignment;
    void* p = std::aligned_alloc(align, (cls + align - 1) / align * align);
    if (!p) throw std::bad_alloc();
    if (huge) madvise(p, cls, MADV_HUGEPAGE);
    return p;
  }

  mutable std::mutex mu_;
  std::unordered_map<size_t, std::vector<void*>> free_;
  MemoryStats stats_;
};

}  // namespace

Allocator* cpu_allocator() {
  // Never destroyed: tensors in static objects may outlive any static here.
  static auto* instance = new CachingCpuAllocator();
  return instance;
}

Allocator* allocator_for(Device device, const char* op) {
  if (device.is_cpu()) return cpu_allocator();
  throw DeviceError(std::string("[") + op + "] expected a device with a backend, got " +
                    device.str() + " (this build of tapeflow has no CUDA backend)");
}

MemoryStats memory_stats(Device device) {
  return allocator_for(device, "memory_stats")->stats();
}
void empty_cache(Device device) {
  allocator_for(device, "empty_cache")->empty_cache();
}

}  // namespace tapeflow
