#include "core/uncached_allocator.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "core/device_memory_limit.hpp"
#include "tapeflow/core/error.hpp"

namespace tapeflow {

UncachedAllocator::UncachedAllocator(std::unique_ptr<SegmentSource> source,
                                     const config::GpuMemoryOptions& options)
    : source_(std::move(source)),
      limit_(device_memory_limit(options, source_->total_bytes())),
      limit_origin_(
          device_memory_limit_origin(options, source_->total_bytes())) {
  stats_.limit_bytes = limit_;
}

UncachedAllocator::~UncachedAllocator() {
  for (const auto& [p, bytes] : live_) source_->release(p, bytes);
}

void* UncachedAllocator::allocate(size_t nbytes) {
  std::lock_guard lock(mu_);
  // A tensor of no bytes has no storage (Storage); one byte keeps the
  // pointer a segment's.
  const size_t size = std::max<size_t>(nbytes, 1);
  void* p = size <= limit_ - stats_.allocated_bytes ? source_->allocate(size)
                                                    : nullptr;
  if (!p) {
    ++stats_.num_ooms;
    throw ResourceExhaustedError("[allocate] " + out_of_memory(size));
  }
  live_.emplace(p, size);
  stats_.allocated_bytes += size;
  stats_.reserved_bytes = stats_.allocated_bytes;
  stats_.peak_bytes = std::max(stats_.peak_bytes, stats_.allocated_bytes);
  stats_.peak_reserved_bytes = stats_.peak_bytes;
  ++stats_.num_allocs;
  ++stats_.num_fresh;
  return p;
}

void UncachedAllocator::deallocate(void* p, size_t) {
  size_t bytes = 0;
  {
    std::lock_guard lock(mu_);
    const auto it = live_.find(p);
    if (it == live_.end()) {
      // Only a bug in tapeflow can get here (Storage owns every pointer).
      std::fprintf(stderr, "UncachedAllocator: free of unknown pointer %p\n",
                   p);
      std::abort();
    }
    bytes = it->second;
    stats_.allocated_bytes -= bytes;
    stats_.reserved_bytes = stats_.allocated_bytes;
    live_.erase(it);
  }
  // Outside the lock: cudaFree waits for the whole device (the CUDA
  // Programming Guide, stream-ordered allocator: cudaMalloc and cudaFree
  // synchronize across all streams), so kernels queued before it that still
  // read p are done when it returns, and allocations on other threads need
  // not wait with it.
  source_->release(p, bytes);
}

MemoryStats UncachedAllocator::stats() const {
  std::lock_guard lock(mu_);
  MemoryStats s = stats_;
  s.num_segments = live_.size();
  return s;
}

std::string UncachedAllocator::out_of_memory(size_t size) const {
  std::ostringstream os;
  os << "expected " << human_bytes(size) << " more on "
     << source_->device_name() << ", got out of memory: in use "
     << human_bytes(stats_.allocated_bytes) << " in " << live_.size()
     << " allocations of a " << human_bytes(limit_) << " limit ("
     << limit_origin_ << "), device free " << human_bytes(source_->free_bytes())
     << "; allocator cuda_malloc, which caches nothing";
  return os.str();
}

}  // namespace tapeflow
