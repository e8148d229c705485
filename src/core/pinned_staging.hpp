#pragma once
// Host<->device copies through pinned staging blocks (CUDA.md §3), over an
// abstract StagingSource so that the bookkeeping is tested on the CPU: a
// copy to the device memcpys into a pinned block, queues the DMA on the
// device's stream and returns (the source may be freed at once); the block
// is tagged with an event and handed out again only once the event says the
// DMA is done. Large copies go in chunks through two blocks, so the memcpy
// of one chunk overlaps the DMA of the other.
#include <cstddef>
#include <exception>
#include <memory>
#include <mutex>
#include <vector>

namespace tapeflow {

/**
 * Pinned host memory, events and asynchronous copies on a device's stream:
 * cudaHostAlloc, cudaEvent* and cudaMemcpyAsync in cuda/, a fake in tests.
 * Events are opaque; each belongs to the device it was created for.
 */
class StagingSource {
 public:
  using Event = void*;
  virtual ~StagingSource() = default;
  /** Pinned host memory; throws (a tapeflow::Error) when refused. */
  virtual void* allocate(size_t bytes) = 0;
  virtual void release(void* block, size_t bytes) = 0;
  virtual Event create_event(int device) = 0;
  virtual void destroy_event(Event event, int device) = 0;
  /** Marks the point after everything queued on device's stream so far. */
  virtual void record(Event event, int device) = 0;
  /** Whether the work before the recorded point is done (cudaEventQuery). */
  virtual bool done(Event event) = 0;
  virtual void wait(Event event) = 0;
  virtual void copy_to_device_async(const void* pinned, void* device_dst,
                                    size_t bytes, int device) = 0;
  virtual void copy_to_host_async(const void* device_src, void* pinned,
                                  size_t bytes, int device) = 0;
};

/** Sizes that shape the staging; the defaults are CUDA.md §3's. */
struct StagingLimits {
  size_t min_block = size_t{64} << 10;     // the smallest block allocated
  size_t chunked_from = size_t{64} << 20;  // copies this large go in chunks
  size_t chunk = size_t{32} << 20;
  size_t max_cached = size_t{256} << 20;  // pinned bytes held, at most
};

/** Counters for tests and benchmarks. */
struct StagingStats {
  size_t held_bytes = 0;  // pinned bytes held, busy or idle
  size_t blocks = 0;
  size_t num_allocations = 0;  // blocks allocated from the source
  size_t num_releases = 0;     // blocks returned to make room
  size_t num_waits = 0;        // acquisitions that had to wait for a DMA
};

/** Thread-safe. Blocks live until the object dies (the backend never dies). */
class PinnedStaging {
 public:
  explicit PinnedStaging(std::unique_ptr<StagingSource> source,
                         StagingLimits limits = {});
  ~PinnedStaging();
  PinnedStaging(const PinnedStaging&) = delete;
  PinnedStaging& operator=(const PinnedStaging&) = delete;

  /** Queues the copy and returns once `host_src` has been read. */
  void to_device(const void* host_src, void* device_dst, size_t bytes,
                 int device);
  /** Returns once `host_dst` holds the bytes (an event wait). */
  void to_host(const void* device_src, void* host_dst, size_t bytes,
               int device);
  StagingStats stats() const;

 private:
  struct Block {
    void* data;
    size_t bytes;
    StagingSource::Event event = nullptr;
    int event_device = -1;
    bool leased = false;
    size_t last_use = 0;  // lease order: the oldest is waited on first
  };

  /** Gives its block back when the copy ends, also by an exception. */
  struct Lease {
    PinnedStaging& staging;
    Block* block;
    bool queued = false;  // a DMA on the block was queued
    int unwinding = std::uncaught_exceptions();
    ~Lease() {
      // A copy that failed after its DMA was queued (no event recorded, or
      // an old one) may still use the block: it is never handed out again.
      if (queued && std::uncaught_exceptions() > unwinding) return;
      staging.give_back(block);
    }
  };

  /** A block of at least `bytes` whose last DMA is done, leased. */
  Block* acquire(size_t bytes);
  /** Records the block's event after the copy just queued on `device`. */
  void mark(Block* block, int device);
  /** Ends the lease: reused once the recorded event fires. */
  void give_back(Block* block);
  /** Frees idle blocks, waiting for their DMA if need be, until `bytes`
   * more fit under the cap or every block is in a copy. */
  void make_room(size_t bytes, std::unique_lock<std::mutex>& lock);
  void release_block(size_t index);
  size_t block_bytes(size_t bytes) const;

  std::unique_ptr<StagingSource> source_;
  StagingLimits limits_;
  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<Block>> blocks_;
  size_t uses_ = 0;
  StagingStats stats_;
};

}  // namespace tapeflow
