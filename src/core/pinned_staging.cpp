#include "core/pinned_staging.hpp"

#include <algorithm>
#include <bit>
#include <cstring>

namespace tapeflow {

namespace {

/** Bytes `i` of a chunked copy start at i * chunk; the last may be short. */
struct Chunks {
  size_t bytes, chunk;
  size_t count() const { return (bytes + chunk - 1) / chunk; }
  size_t offset(size_t i) const { return i * chunk; }
  size_t size(size_t i) const { return std::min(chunk, bytes - i * chunk); }
};

}  // namespace

PinnedStaging::PinnedStaging(std::unique_ptr<StagingSource> source,
                             StagingLimits limits)
    : source_(std::move(source)), limits_(limits) {}

PinnedStaging::~PinnedStaging() {
  for (const auto& b : blocks_) {
    if (b->event) {
      source_->wait(b->event);  // no DMA may still read or write the block
      source_->destroy_event(b->event, b->event_device);
    }
    source_->release(b->data, b->bytes);
  }
}

size_t PinnedStaging::block_bytes(size_t bytes) const {
  return std::bit_ceil(std::max(bytes, limits_.min_block));
}

StagingStats PinnedStaging::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

void PinnedStaging::release_block(size_t index) {
  Block& b = *blocks_[index];
  if (b.event) source_->destroy_event(b.event, b.event_device);
  source_->release(b.data, b.bytes);
  stats_.held_bytes -= b.bytes;
  --stats_.blocks;
  ++stats_.num_releases;
  blocks_.erase(blocks_.begin() + std::ptrdiff_t(index));
}

void PinnedStaging::make_room(size_t bytes,
                              std::unique_lock<std::mutex>& lock) {
  const auto fits = [&] {
    return stats_.held_bytes + bytes <= limits_.max_cached;
  };
  // First the idle blocks whose DMA is done, then the oldest busy one.
  for (size_t i = blocks_.size(); i-- > 0 && !fits();) {
    const Block& b = *blocks_[i];
    if (!b.leased && (!b.event || source_->done(b.event))) release_block(i);
  }
  while (!fits()) {
    Block* oldest = nullptr;
    for (const auto& b : blocks_)
      if (!b->leased && (!oldest || b->last_use < oldest->last_use))
        oldest = b.get();
    if (!oldest) return;    // every block is in a copy now
    oldest->leased = true;  // nobody takes or frees it while we wait
    ++stats_.num_waits;
    lock.unlock();
    if (oldest->event) source_->wait(oldest->event);
    lock.lock();
    oldest->leased = false;
    for (size_t i = 0; i < blocks_.size(); ++i)
      if (blocks_[i].get() == oldest) release_block(i);
  }
}

PinnedStaging::Block* PinnedStaging::acquire(size_t bytes) {
  const size_t size = block_bytes(bytes);
  std::unique_lock lock(mutex_);
  Block* oldest = nullptr;  // the idle block of this size used longest ago
  for (const auto& b : blocks_) {
    if (b->leased || b->bytes != size) continue;
    if (!b->event || source_->done(b->event)) {
      b->leased = true;
      return b.get();
    }
    if (!oldest || b->last_use < oldest->last_use) oldest = b.get();
  }
  // Over the cap, wait for the oldest busy block of this size rather than
  // allocate one more; else make room among the other sizes (over the cap
  // when every block is in a copy: by at most two blocks a copy).
  if (oldest && stats_.held_bytes + size > limits_.max_cached) {
    oldest->leased = true;
    ++stats_.num_waits;
    lock.unlock();
    source_->wait(oldest->event);
    return oldest;
  }
  make_room(size, lock);
  auto block = std::make_unique<Block>(Block{source_->allocate(size), size});
  block->leased = true;
  stats_.held_bytes += size;
  ++stats_.blocks;
  ++stats_.num_allocations;
  blocks_.push_back(std::move(block));
  return blocks_.back().get();
}

void PinnedStaging::mark(Block* block, int device) {
  // Only the copy holding the lease touches the event.
  if (block->event && block->event_device != device) {
    source_->destroy_event(block->event, block->event_device);
    block->event = nullptr;
  }
  if (!block->event) {
    block->event = source_->create_event(device);
    block->event_device = device;
  }
  source_->record(block->event, device);
}

void PinnedStaging::give_back(Block* block) {
  std::lock_guard lock(mutex_);
  block->leased = false;
  block->last_use = ++uses_;
}

void PinnedStaging::to_device(const void* host_src, void* device_dst,
                              size_t bytes, int device) {
  if (bytes == 0) return;
  const auto* src = static_cast<const char*>(host_src);
  auto* dst = static_cast<char*>(device_dst);
  if (bytes < limits_.chunked_from) {
    Block* b = acquire(bytes);
    Lease lease{*this, b};
    std::memcpy(b->data, src, bytes);
    source_->copy_to_device_async(b->data, dst, bytes, device);
    lease.queued = true;
    mark(b, device);
    return;
  }
  // Two blocks in turn: chunk i waits only for the DMA of chunk i - 2.
  const Chunks chunks{bytes, limits_.chunk};
  Block* ring[2] = {acquire(limits_.chunk), nullptr};
  Lease first{*this, ring[0]};
  ring[1] = acquire(limits_.chunk);
  Lease second{*this, ring[1]};
  Lease* leases[2] = {&first, &second};
  for (size_t i = 0; i < chunks.count(); ++i) {
    Block* b = ring[i % 2];
    if (i >= 2) source_->wait(b->event);
    std::memcpy(b->data, src + chunks.offset(i), chunks.size(i));
    source_->copy_to_device_async(b->data, dst + chunks.offset(i),
                                  chunks.size(i), device);
    leases[i % 2]->queued = true;
    mark(b, device);
  }
}

void PinnedStaging::to_host(const void* device_src, void* host_dst,
                            size_t bytes, int device) {
  if (bytes == 0) return;
  const auto* src = static_cast<const char*>(device_src);
  auto* dst = static_cast<char*>(host_dst);
  if (bytes < limits_.chunked_from) {
    Block* b = acquire(bytes);
    Lease lease{*this, b};
    source_->copy_to_host_async(src, b->data, bytes, device);
    lease.queued = true;
    mark(b, device);
    source_->wait(b->event);
    std::memcpy(dst, b->data, bytes);
    return;
  }
  // Chunk i + 2's DMA is queued as soon as chunk i is out of its block, so
  // the DMA of one chunk overlaps the memcpy of the other.
  const Chunks chunks{bytes, limits_.chunk};
  Block* ring[2] = {acquire(limits_.chunk), nullptr};
  Lease first{*this, ring[0]};
  ring[1] = acquire(limits_.chunk);
  Lease second{*this, ring[1]};
  Lease* leases[2] = {&first, &second};
  const auto queue = [&](size_t i) {
    Block* b = ring[i % 2];
    source_->copy_to_host_async(src + chunks.offset(i), b->data, chunks.size(i),
                                device);
    leases[i % 2]->queued = true;
    mark(b, device);
  };
  queue(0);
  if (chunks.count() > 1) queue(1);
  for (size_t i = 0; i < chunks.count(); ++i) {
    Block* b = ring[i % 2];
    source_->wait(b->event);
    std::memcpy(dst + chunks.offset(i), b->data, chunks.size(i));
    if (i + 2 < chunks.count()) queue(i + 2);
  }
}

}  // namespace tapeflow
