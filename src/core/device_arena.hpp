#pragma once
// A device's allocator as GpuMemoryOptions choose it, made at the device's
// first allocation: the BFC arena (allocator_type "BFC"), or each tensor its
// own segment ("cuda_malloc", for debugging; env TF_GPU_ALLOCATOR=cuda_malloc
// chooses it too, as in TensorFlow). Design: CUDA.md §2.
#include <atomic>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "core/bfc_arena.hpp"
#include "tapeflow/config.hpp"
#include "tapeflow/core/storage.hpp"

namespace tapeflow {

/**
 * The options for a device's arena, made at its first allocation: from then
 * on set_gpu_memory_options refuses changes (src/core/gpu_memory_options.cpp).
 */
config::GpuMemoryOptions freeze_gpu_memory_options();

/**
 * The allocator_type in force: TF_GPU_ALLOCATOR=cuda_malloc overrides
 * `option`; any other value of it is a ValueError ("[allocate] ...").
 */
std::string resolve_allocator_type(const std::string& option);

/** What a device's allocator resolved to, for the placement log's line. */
struct DeviceMemoryPolicy {
  size_t limit_bytes = 0;
  bool allow_growth = true;  // always, for cuda_malloc: a segment per tensor
  config::GpuMemoryOptions options;  // allocator_type as resolved
};

/**
 * A device's allocator, made at the first allocation from the options then
 * in force (which freezes them). Backends hold one per device.
 */
class DeviceArena final : public Allocator {
 public:
  using MakeSource = std::function<std::unique_ptr<SegmentSource>()>;
  /** Told once the allocator is made, e.g. to log the device's limit. */
  using OnMade = std::function<void(const DeviceMemoryPolicy& policy)>;
  explicit DeviceArena(MakeSource make_source, OnMade on_made = {})
      : make_source_(std::move(make_source)), on_made_(std::move(on_made)) {}
  void* allocate(size_t nbytes) override { return made().allocate(nbytes); }
  void deallocate(void* p, size_t nbytes) override {
    made_.load(std::memory_order_acquire)->deallocate(p, nbytes);
  }
  /** Zeros until the first allocation: asking makes no allocator. */
  MemoryStats stats() const override;
  void empty_cache() override;

 private:
  Allocator& made() {
    Allocator* a = made_.load(std::memory_order_acquire);
    return a ? *a : make();
  }
  Allocator& make();

  MakeSource make_source_;
  OnMade on_made_;
  std::mutex making_;
  std::unique_ptr<Allocator> allocator_;
  std::atomic<Allocator*> made_{nullptr};
};

}  // namespace tapeflow
