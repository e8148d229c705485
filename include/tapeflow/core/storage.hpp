#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "tapeflow/core/device.hpp"

namespace tapeflow {

/** Byte counters an allocator keeps; `peak_bytes` is the high-water mark. */
struct MemoryStats {
  size_t allocated_bytes = 0;  // handed out to live tensors now
  size_t cached_bytes = 0;     // freed by tensors, kept for reuse
  size_t peak_bytes = 0;
  size_t num_allocs = 0;  // requests served, from the cache or fresh
  size_t num_fresh = 0;   // requests that went to the system
  // Device arenas (config::GpuMemoryOptions); 0 on the CPU.
  size_t reserved_bytes = 0;  // segments held from the device: in use + cached
  size_t peak_reserved_bytes = 0;
  size_t limit_bytes = 0;         // the cap on reserved bytes
  size_t largest_free_bytes = 0;  // the largest request served without growing
  size_t num_segments = 0;
  size_t num_ooms = 0;  // requests refused with ResourceExhaustedError
};

/** Memory for one device; implementations cache freed blocks. */
class Allocator {
 public:
  virtual ~Allocator() = default;
  virtual void* allocate(size_t nbytes) = 0;
  virtual void deallocate(void* p, size_t nbytes) = 0;
  virtual MemoryStats stats() const = 0;
  /** Returns every cached block to the system. */
  virtual void empty_cache() = 0;
};

/** A buffer owned by one allocator; tensors share it by reference count. */
class Storage {
 public:
  Storage(size_t nbytes, Device device, Allocator* allocator)
      : nbytes_(nbytes), device_(device), allocator_(allocator) {
    data_ = nbytes ? allocator->allocate(nbytes) : nullptr;
  }
  ~Storage() {
    if (!data_) return;
    if (finalizer_) finalizer_(data_, nbytes_);
    allocator_->deallocate(data_, nbytes_);
  }
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data() const { return data_; }
  size_t nbytes() const { return nbytes_; }
  Device device() const { return device_; }
  /**
   * How many in-place writes (assign, optimizer updates) this buffer has
   * taken: what a tape node or a cache of a converted copy compares to tell
   * whether the values it saw are still there. A copy-on-write move to a
   * fresh buffer is a new Storage, so a cache must key on the Storage it
   * holds alive as well as on the version.
   */
  uint64_t version() const { return version_.load(std::memory_order_relaxed); }
  /** Called by every in-place writer, before it writes. */
  void bump_version() { version_.fetch_add(1, std::memory_order_relaxed); }
  /**
   * In-place writes into a Variable's buffer that have begun and not yet
   * finished: a snapshot that holds the buffer (so later writes move the
   * Variable elsewhere) waits for these to drain before it reads.
   */
  uint32_t writers() const { return writers_.load(std::memory_order_acquire); }
  void begin_write() { writers_.fetch_add(1, std::memory_order_relaxed); }
  void end_write() { writers_.fetch_sub(1, std::memory_order_release); }

  /** Destroys the objects the buffer holds (string_ elements) before it goes.
   */
  using Finalizer = void (*)(void* data, size_t nbytes);
  void set_finalizer(Finalizer finalizer) { finalizer_ = finalizer; }

 private:
  void* data_ = nullptr;
  std::atomic<uint64_t> version_ = 0;
  std::atomic<uint32_t> writers_ = 0;
  Finalizer finalizer_ = nullptr;
  size_t nbytes_;
  Device device_;
  Allocator* allocator_;
};

}  // namespace tapeflow
