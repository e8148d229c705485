#pragma once
// The free lists and byte counters every caching allocator shares; each
// allocator only says how to get and release memory of its device.
#include <algorithm>
#include <array>
#include <atomic>
#include <mutex>
#include <thread>
#include <vector>

#include "core/size_class.hpp"
#include "tapeflow/core/storage.hpp"

namespace tapeflow {

/** Spins briefly: the critical sections of BlockCache are a few instructions.
 */
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
 * Freed blocks kept by size class instead of being given back to the system,
 * with the counters of MemoryStats. Thread-safe.
 */
class BlockCache {
 public:
  /** A cached block of `cls`, or nullptr; counts the request either way. */
  void* take(const SizeClass& cls) {
    std::lock_guard lock(mu_);
    ++stats_.num_allocs;
    stats_.allocated_bytes += cls.bytes;
    stats_.peak_bytes = std::max(stats_.peak_bytes, stats_.allocated_bytes);
    auto& blocks = free_[cls.index];
    if (blocks.empty()) {
      ++stats_.num_fresh;
      return nullptr;
    }
    void* p = blocks.back();
    blocks.pop_back();
    stats_.cached_bytes -= cls.bytes;
    return p;
  }
  /** Undoes the count of a take() whose fresh allocation then failed. */
  void cancel(const SizeClass& cls) {
    std::lock_guard lock(mu_);
    stats_.allocated_bytes -= cls.bytes;
  }
  void put(void* p, const SizeClass& cls) {
    std::lock_guard lock(mu_);
    free_[cls.index].push_back(p);
    stats_.allocated_bytes -= cls.bytes;
    stats_.cached_bytes += cls.bytes;
  }
  MemoryStats stats() const {
    std::lock_guard lock(mu_);
    return stats_;
  }
  /** Hands every cached block to `release`. */
  template <class Release>
  void drain(Release&& release) {
    std::lock_guard lock(mu_);
    for (auto& blocks : free_) {
      for (void* p : blocks) release(p);
      blocks.clear();
    }
    stats_.cached_bytes = 0;
  }

 private:
  mutable SpinLock mu_;
  std::array<std::vector<void*>, kNumSizeClasses> free_;
  MemoryStats stats_;
};

}  // namespace tapeflow
