#pragma once
// A best-fit-with-coalescing arena for device memory (TensorFlow's
// bfc_allocator.cc, with PyTorch's CUDACachingAllocator segment sizes and
// pools). No CUDA here: device memory comes from a SegmentSource, so the
// whole policy runs in CI on fake addresses. Design: CUDA.md §2.
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "tapeflow/config.hpp"
#include "tapeflow/core/storage.hpp"

namespace tapeflow {

/** Where an arena's segments come from: cudaMalloc, or a fake in tests. */
class SegmentSource {
 public:
  virtual ~SegmentSource() = default;
  /** `bytes` of device memory, or nullptr when the device has no room. */
  virtual void* allocate(size_t bytes) = 0;
  virtual void release(void* p, size_t bytes) = 0;
  /** The device's total memory (totalGlobalMem): what a fraction is of. */
  virtual size_t total_bytes() const = 0;
  /** What the device has free now (cudaMemGetInfo). */
  virtual size_t free_bytes() const = 0;
  /** Waits for queued work, before segments go back to retry a request. */
  virtual void synchronize() {}
  /** "cuda:0", for messages. */
  virtual std::string device_name() const = 0;
};

/**
 * Chunks carved from segments, kept in 21 power-of-two bins per pool (best
 * fit by size, then address), split when enough would remain and merged with
 * free neighbours on free. Requests of at most 1 MiB come from 2 MiB
 * segments (the small pool), larger ones from 20 MiB segments or their own
 * rounded to 2 MiB. Reserved bytes (all segments) never pass the limit. A
 * request that fits nowhere frees the wholly free segments and retries once,
 * then throws ResourceExhaustedError("[allocate] ...") with the numbers a
 * user needs; the op that allocated renames it. Thread-safe.
 */
class BfcArena final : public Allocator {
 public:
  BfcArena(std::unique_ptr<SegmentSource> source,
           const config::GpuMemoryOptions& options);
  ~BfcArena() override;

  void* allocate(size_t nbytes) override;
  void deallocate(void* p, size_t nbytes) override;
  MemoryStats stats() const override;
  /** Returns every wholly free segment to the source. */
  void empty_cache() override;

  /** Empty when chunks tile their segments, no two free chunks touch and
   * the counters equal a recount; else what is wrong (tests). */
  std::string check_invariants() const;
  /** The limit on reserved bytes and whether growth is on, as resolved. */
  size_t limit_bytes() const { return limit_; }
  bool allow_growth() const { return allow_growth_; }

  static constexpr size_t kRound = 512;
  static constexpr size_t kSmallRequest = size_t{1} << 20;
  static constexpr size_t kSmallSegment = size_t{2} << 20;
  static constexpr size_t kMidRequest = size_t{10} << 20;
  static constexpr size_t kMidSegment = size_t{20} << 20;
  static constexpr size_t kLargeRound = size_t{2} << 20;
  static constexpr int kBins = 21;

 private:
  struct Segment;
  struct Chunk {
    uintptr_t address = 0;
    size_t size = 0;
    bool in_use = false;
    Chunk* prev = nullptr;  // neighbours within the segment
    Chunk* next = nullptr;
    Segment* segment = nullptr;
  };
  struct BySizeThenAddress {
    bool operator()(const Chunk* a, const Chunk* b) const {
      return a->size != b->size ? a->size < b->size : a->address < b->address;
    }
  };
  using Bin = std::set<Chunk*, BySizeThenAddress>;
  struct Pool {
    Bin bins[kBins];
  };
  struct Segment {
    uintptr_t base = 0;
    size_t size = 0;
    bool small = false;
    Chunk* first = nullptr;
  };

  Chunk* find_fit(Pool& pool, size_t size);
  Chunk* grow(size_t size, bool small);
  Chunk* take(size_t size, bool small);
  void* use(Chunk* c, size_t size);
  /** `left` takes in its right neighbour `right`, which is deleted. */
  void absorb(Chunk* left, Chunk* right);
  void insert_free(Chunk* c);
  void erase_free(Chunk* c);
  Pool& pool_of(const Segment* s) { return s->small ? small_ : large_; }
  void release_free_segments();
  size_t largest_free() const;
  std::string out_of_memory(size_t size) const;

  std::unique_ptr<SegmentSource> source_;
  size_t limit_ = 0;
  std::string limit_origin_;  // "memory_limit_bytes", "fraction 1 of ..."
  bool allow_growth_ = true;
  mutable std::mutex mu_;
  Pool small_, large_;
  std::map<uintptr_t, std::unique_ptr<Segment>> segments_;
  std::unordered_map<uintptr_t, Chunk*> used_;  // address -> chunk in use
  MemoryStats stats_;
};

/** The bin of a chunk of `size` bytes: floor(log2(size / 256)), capped. */
int bfc_bin(size_t size);

/** The segment a request of `size` (rounded) bytes opens in its pool. */
size_t bfc_segment_size(size_t size);

}  // namespace tapeflow
