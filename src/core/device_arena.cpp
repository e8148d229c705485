#include "core/device_arena.hpp"

#include <cstdlib>

#include "core/op_error.hpp"
#include "core/uncached_allocator.hpp"
#include "tapeflow/core/error.hpp"

namespace tapeflow {

std::string resolve_allocator_type(const std::string& option) {
  const char* env = std::getenv("TF_GPU_ALLOCATOR");
  if (env == nullptr || *env == '\0') return option;
  if (std::string(env) != "cuda_malloc")
    throw op_error<ValueError>(
        "allocate",
        "expected TF_GPU_ALLOCATOR \"cuda_malloc\" or unset, got \"", env,
        "\"");
  return env;
}

Allocator& DeviceArena::make() {
  std::lock_guard lock(making_);
  if (!allocator_) {
    DeviceMemoryPolicy policy{.options = freeze_gpu_memory_options()};
    policy.options.allocator_type =
        resolve_allocator_type(policy.options.allocator_type);
    if (policy.options.allocator_type == "cuda_malloc") {
      auto uncached =
          std::make_unique<UncachedAllocator>(make_source_(), policy.options);
      policy.limit_bytes = uncached->limit_bytes();
      allocator_ = std::move(uncached);
    } else {
      auto arena = std::make_unique<BfcArena>(make_source_(), policy.options);
      policy.limit_bytes = arena->limit_bytes();
      policy.allow_growth = arena->allow_growth();
      allocator_ = std::move(arena);
    }
    // Published before the init line: a throw from it (the device's
    // properties) must not leave an allocator that frees cannot reach.
    made_.store(allocator_.get(), std::memory_order_release);
    if (on_made_) on_made_(policy);
  }
  return *allocator_;
}

MemoryStats DeviceArena::stats() const {
  const Allocator* a = made_.load(std::memory_order_acquire);
  return a ? a->stats() : MemoryStats{};
}

void DeviceArena::empty_cache() {
  if (Allocator* a = made_.load(std::memory_order_acquire)) a->empty_cache();
}

}  // namespace tapeflow
