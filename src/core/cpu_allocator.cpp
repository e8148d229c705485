#include "core/cpu_allocator.hpp"

#include <sys/mman.h>

#include <cstdlib>
#include <new>

#include "core/backend_loader.hpp"
#include "core/block_cache.hpp"
#include "core/op_error.hpp"
#include "core/registry.hpp"
#include "tapeflow/core/error.hpp"
#include "tapeflow/memory.hpp"

namespace tapeflow {
namespace {

constexpr size_t kAlignment = kMinBlock;
constexpr size_t kHugePage = size_t{2} << 20;

/**
 * Keeps freed blocks by size class instead of returning them: a fresh page
 * costs ~12 us to fault in on these VMs, so a training loop that gave its
 * activations back to the OS every step would spend most of its time there.
 */
class CachingCpuAllocator final : public Allocator {
 public:
  void* allocate(size_t nbytes) override {
    const SizeClass cls = size_class(nbytes);
    if (void* p = cache_.take(cls)) return p;
    void* p = fresh(cls.bytes);
    if (!p) {
      cache_.cancel(cls);
      throw std::bad_alloc();
    }
    return p;
  }
  void deallocate(void* p, size_t nbytes) override {
    cache_.put(p, size_class(nbytes));
  }
  MemoryStats stats() const override { return cache_.stats(); }
  void empty_cache() override {
    cache_.drain([](void* p) { std::free(p); });
  }

 private:
  static void* fresh(size_t bytes) {
    // Large blocks are 2 MiB aligned and asked for as huge pages: one fault
    // per 2 MiB instead of 512.
    const bool huge = bytes >= 2 * kHugePage;
    const size_t align = huge ? kHugePage : kAlignment;
    void* p = std::aligned_alloc(align, (bytes + align - 1) / align * align);
    if (p && huge) madvise(p, bytes, MADV_HUGEPAGE);
    return p;
  }

  BlockCache cache_;
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
    throw op_error<DeviceError>(
        op, "expected a device with a backend, got ", device.str(),
        " (the CUDA backend is not loaded: ", cuda_load_error(), ")");
  const int count = b->device_count();
  if (device.index < 0 || device.index >= count)
    throw op_error<DeviceError>(op, "expected a ", b->name(),
                                " device index in [0, ", count, "), got ",
                                device.str());
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
