#include "core/cpu_allocator.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cstdlib>
#include <mutex>
#include <new>
#include <thread>
#include <vector>

#include "core/backend_loader.hpp"
#include "core/registry.hpp"
#include "core/size_class.hpp"
#include "tapeflow/core/error.hpp"
#include "tapeflow/memory.hpp"

namespace tapeflow {
namespace {

constexpr size_t kAlignment = kMinBlock;
constexpr size_t kHugePage = size_t{2} << 20;

/** Spins briefly: the critical sections below are a few instructions. */
class SpinLock {
 public:
  void lock() {
    while (flag_.test_and_set(std::memory_order_acquire))
      while (flag_.test(std::memory_order_relaxed)) std::this_thread::yield();
  }
  void unlock() { flag_.clear(std::memory_order_release); }

 private:
  std::atomic_flag flag_ = ATOMIC_FLAG_INIT;
};

/**
 * Keeps freed blocks by size class instead of returning them: a fresh page
 * costs ~12 us to fault in on these VMs, so a training loop that gave its
 * activations back to the OS every step would spend most of its time there.
 */
class CachingCpuAllocator final : public Allocator {
 public:
  void* allocate(size_t nbytes) override {
    const SizeClass cls = size_class(nbytes);
    {
      std::lock_guard lock(mu_);
      ++stats_.num_allocs;
      note_allocated(cls.bytes);
      auto& blocks = free_[cls.index];
      if (!blocks.empty()) {
        void* p = blocks.back();
        blocks.pop_back();
        stats_.cached_bytes -= cls.bytes;
        return p;
      }
      ++stats_.num_fresh;
    }
    return fresh(cls.bytes);
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
    for (auto& blocks : free_) {
      for (void* p : blocks) std::free(p);
      blocks.clear();
    }
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

  mutable SpinLock mu_;
  std::array<std::vector<void*>, kNumSizeClasses> free_;
  MemoryStats stats_;
};

}  // namespace

Allocator* cpu_allocator() {
  // Never destroyed: tensors in static objects may outlive any static here.
  static auto* instance = new CachingCpuAllocator();
  return instance;
}

namespace {
DeviceBackend* g_backends[kNumDeviceTypes] = {};
}  // namespace

DeviceBackend* device_backend(DeviceType type) {
  if (type == DeviceType::cuda) load_cuda_backend();
  return g_backends[static_cast<int>(type)];
}
void set_device_backend(DeviceType type, DeviceBackend* backend) {
  g_backends[static_cast<int>(type)] = backend;
}

DeviceBackend* checked_backend(Device device, const char* op) {
  ensure_backends_registered();
  DeviceBackend* b = device_backend(device.type);
  if (!b)
    throw DeviceError(
        std::string("[") + op + "] expected a device with a backend, got " +
        device.str() +
        " (the CUDA backend is not loaded: " + cuda_load_error() + ")");
  const int count = b->device_count();
  if (device.index < 0 || device.index >= count)
    throw DeviceError(std::string("[") + op + "] expected a " + b->name() +
                      " device index in [0, " + std::to_string(count) +
                      "), got " + device.str());
  return b;
}

Allocator* allocator_for(Device device, const char* op) {
  if (device.is_cpu()) return cpu_allocator();
  return checked_backend(device, op)->allocator(device.index);
}

MemoryStats memory_stats(Device device) {
  return allocator_for(device, "memory_stats")->stats();
}
void empty_cache(Device device) {
  allocator_for(device, "empty_cache")->empty_cache();
}

}  // namespace tapeflow
