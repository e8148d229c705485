#include "core/bfc_arena.hpp"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include "core/device_memory_limit.hpp"
#include "core/op_error.hpp"
#include "tapeflow/core/error.hpp"

namespace tapeflow {
namespace {

size_t round_up(size_t n, size_t to) {
  return (n + to - 1) / to * to;
}

/** TF_FORCE_GPU_ALLOW_GROWTH=true|false overrides the option, as in TF. */
bool resolve_growth(bool option) {
  const char* env = std::getenv("TF_FORCE_GPU_ALLOW_GROWTH");
  if (!env) return option;
  if (std::strcmp(env, "true") == 0) return true;
  if (std::strcmp(env, "false") == 0) return false;
  return option;
}

}  // namespace

int bfc_bin(size_t size) {
  const int b = std::bit_width(size >> 8) - 1;
  return std::clamp(b, 0, BfcArena::kBins - 1);
}

size_t bfc_segment_size(size_t size) {
  if (size <= BfcArena::kSmallRequest) return BfcArena::kSmallSegment;
  if (size <= BfcArena::kMidRequest) return BfcArena::kMidSegment;
  return round_up(size, BfcArena::kLargeRound);
}

BfcArena::BfcArena(std::unique_ptr<SegmentSource> source,
                   const config::GpuMemoryOptions& options)
    : source_(std::move(source)),
      limit_(device_memory_limit(options, source_->total_bytes())),
      limit_origin_(
          device_memory_limit_origin(options, source_->total_bytes())),
      allow_growth_(resolve_growth(options.allow_growth)) {
  stats_.limit_bytes = limit_;
  if (allow_growth_) return;
  // Reserve the cap now (what is free of it, less room for the CUDA context
  // of other libraries), backing off by 10% until the device agrees (TF).
  constexpr size_t headroom = size_t{512} << 20;
  const size_t free = source_->free_bytes();
  size_t want = std::min(limit_, free > headroom ? free - headroom : 0) /
                kLargeRound * kLargeRound;
  std::lock_guard lock(mu_);
  while (want >= kSmallSegment && !grow(want, false))
    want = static_cast<size_t>(static_cast<double>(want) * 0.9) / kLargeRound *
           kLargeRound;
}

BfcArena::~BfcArena() {
  for (auto& [base, segment] : segments_) {
    for (Chunk* c = segment->first; c;) {
      Chunk* next = c->next;
      delete c;
      c = next;
    }
    source_->release(reinterpret_cast<void*>(base), segment->size);
  }
}

void BfcArena::insert_free(Chunk* c) {
  pool_of(c->segment).bins[bfc_bin(c->size)].insert(c);
}
void BfcArena::erase_free(Chunk* c) {
  pool_of(c->segment).bins[bfc_bin(c->size)].erase(c);
}

BfcArena::Chunk* BfcArena::find_fit(Pool& pool, size_t size) {
  Chunk probe;
  probe.size = size;
  for (int b = bfc_bin(size); b < kBins; ++b) {
    const auto it = pool.bins[b].lower_bound(&probe);
    if (it != pool.bins[b].end()) return *it;
  }
  return nullptr;
}

BfcArena::Chunk* BfcArena::grow(size_t size, bool small) {
  size_t bytes = small ? kSmallSegment : bfc_segment_size(size);
  // Near the limit a large request may still fit in a segment of its own.
  if (stats_.reserved_bytes + bytes > limit_ && !small)
    bytes = round_up(size, kLargeRound);
  if (stats_.reserved_bytes + bytes > limit_) return nullptr;
  void* p = source_->allocate(bytes);
  if (!p) return nullptr;
  auto segment = std::make_unique<Segment>();
  segment->base = reinterpret_cast<uintptr_t>(p);
  segment->size = bytes;
  segment->small = small;
  auto* c = new Chunk{
      .address = segment->base, .size = bytes, .segment = segment.get()};
  segment->first = c;
  segments_.emplace(segment->base, std::move(segment));
  stats_.reserved_bytes += bytes;
  stats_.peak_reserved_bytes =
      std::max(stats_.peak_reserved_bytes, stats_.reserved_bytes);
  ++stats_.num_fresh;
  insert_free(c);
  return c;
}

BfcArena::Chunk* BfcArena::take(size_t size, bool small) {
  if (Chunk* c = find_fit(small ? small_ : large_, size)) return c;
  if (Chunk* c = grow(size, small)) return c;
  // No room for a small segment: the large pool (a reserved region) serves.
  return small ? find_fit(large_, size) : nullptr;
}

void* BfcArena::use(Chunk* c, size_t size) {
  erase_free(c);
  const size_t rest = c->size - size;
  // PyTorch's should_split: small segments keep any 512 B remainder, large
  // ones only what a large request could use.
  if (c->segment->small ? rest >= kRound : rest > kSmallRequest) {
    auto* r = new Chunk{.address = c->address + size,
                        .size = rest,
                        .prev = c,
                        .next = c->next,
                        .segment = c->segment};
    if (c->next) c->next->prev = r;
    c->next = r;
    c->size = size;
    insert_free(r);
  }
  c->in_use = true;
  used_.emplace(c->address, c);
  stats_.allocated_bytes += c->size;
  stats_.peak_bytes = std::max(stats_.peak_bytes, stats_.allocated_bytes);
  ++stats_.num_allocs;
  return reinterpret_cast<void*>(c->address);
}

void* BfcArena::allocate(size_t nbytes) {
  // Past half the address space no device has it (and rounding would wrap).
  if (nbytes > SIZE_MAX / 2) {
    std::lock_guard lock(mu_);
    ++stats_.num_ooms;
    throw ResourceExhaustedError("[allocate] " + out_of_memory(nbytes));
  }
  const size_t size = round_up(std::max<size_t>(nbytes, 1), kRound);
  const bool small = size <= kSmallRequest;
  std::lock_guard lock(mu_);
  Chunk* c = take(size, small);
  if (!c) {
    // Once: wait for queued frees, return wholly free segments, retry.
    source_->synchronize();
    release_free_segments();
    c = take(size, small);
  }
  if (!c) {
    ++stats_.num_ooms;
    throw ResourceExhaustedError("[allocate] " + out_of_memory(size));
  }
  return use(c, size);
}

void BfcArena::deallocate(void* p, size_t) {
  std::lock_guard lock(mu_);
  const auto it = used_.find(reinterpret_cast<uintptr_t>(p));
  if (it == used_.end()) {
    // Only a bug in tapeflow can get here (Storage owns every pointer).
    std::fprintf(stderr, "BfcArena: free of unknown pointer %p\n", p);
    std::abort();
  }
  Chunk* c = it->second;
  used_.erase(it);
  c->in_use = false;
  stats_.allocated_bytes -= c->size;
  // Merge with free neighbours (TF's TryToCoalesce).
  if (Chunk* prev = c->prev; prev && !prev->in_use) {
    erase_free(prev);
    absorb(prev, c);
    c = prev;
  }
  if (Chunk* next = c->next; next && !next->in_use) {
    erase_free(next);
    absorb(c, next);
  }
  insert_free(c);
}

void BfcArena::absorb(Chunk* left, Chunk* right) {
  left->size += right->size;
  left->next = right->next;
  if (right->next) right->next->prev = left;
  delete right;
}

void BfcArena::release_free_segments() {
  for (auto it = segments_.begin(); it != segments_.end();) {
    Segment& s = *it->second;
    if (s.first->in_use || s.first->next) {
      ++it;
      continue;
    }
    erase_free(s.first);
    delete s.first;
    source_->release(reinterpret_cast<void*>(s.base), s.size);
    stats_.reserved_bytes -= s.size;
    it = segments_.erase(it);
  }
}

void BfcArena::empty_cache() {
  source_->synchronize();
  std::lock_guard lock(mu_);
  release_free_segments();
}

size_t BfcArena::largest_free() const {
  size_t largest = 0;
  for (const Pool* pool : {&small_, &large_})
    for (int b = kBins - 1; b >= 0; --b)
      if (!pool->bins[b].empty()) {
        largest = std::max(largest, (*pool->bins[b].rbegin())->size);
        break;
      }
  return largest;
}

MemoryStats BfcArena::stats() const {
  std::lock_guard lock(mu_);
  MemoryStats s = stats_;
  s.cached_bytes = s.reserved_bytes - s.allocated_bytes;
  s.largest_free_bytes = largest_free();
  s.num_segments = segments_.size();
  return s;
}

std::string BfcArena::out_of_memory(size_t size) const {
  const size_t cached = stats_.reserved_bytes - stats_.allocated_bytes;
  const size_t largest = largest_free();
  const int fragmentation =
      cached
          ? static_cast<int>(100.0 * (1.0 - static_cast<double>(largest) /
                                                static_cast<double>(cached)) +
                             0.5)
          : 0;
  std::ostringstream os;
  os << "expected " << human_bytes(size) << " more on "
     << source_->device_name() << ", got out of memory: in use "
     << human_bytes(stats_.allocated_bytes) << ", cached "
     << human_bytes(cached) << " (largest free " << human_bytes(largest)
     << ", fragmentation " << fragmentation << "%), reserved "
     << human_bytes(stats_.reserved_bytes) << " of a " << human_bytes(limit_)
     << " limit (" << limit_origin_ << "), device free "
     << human_bytes(source_->free_bytes())
     << "; wholly free segments were returned and the request retried";
  return os.str();
}

std::string BfcArena::check_invariants() const {
  std::lock_guard lock(mu_);
  std::ostringstream why;
  size_t reserved = 0, allocated = 0, used = 0, free_chunks = 0;
  for (const auto& [base, s] : segments_) {
    reserved += s->size;
    uintptr_t at = s->base;
    const Chunk* prev = nullptr;
    for (const Chunk* c = s->first; c; prev = c, c = c->next) {
      if (c->address != at || c->prev != prev || c->segment != s.get())
        why << "chunk at " << c->address << " breaks the tiling of segment "
            << base << "\n";
      if (!c->in_use && prev && !prev->in_use)
        why << "free neighbours at " << prev->address << " and " << c->address
            << "\n";
      if (c->in_use) {
        allocated += c->size;
        ++used;
        if (!used_.count(c->address))
          why << "chunk in use at " << c->address << " is not indexed\n";
      } else {
        ++free_chunks;
        const Pool& pool = s->small ? small_ : large_;
        if (!pool.bins[bfc_bin(c->size)].count(const_cast<Chunk*>(c)))
          why << "free chunk at " << c->address << " is not in its bin\n";
      }
      at += c->size;
    }
    if (at != s->base + s->size)
      why << "segment " << base << " tiles " << at - s->base << " of "
          << s->size << " bytes\n";
  }
  size_t binned = 0;
  for (const Pool* pool : {&small_, &large_})
    for (const Bin& bin : pool->bins) binned += bin.size();
  if (binned != free_chunks)
    why << binned << " chunks in bins, " << free_chunks << " free\n";
  if (used != used_.size())
    why << used_.size() << " indexed, " << used << " in use\n";
  if (reserved != stats_.reserved_bytes || allocated != stats_.allocated_bytes)
    why << "counters say reserved " << stats_.reserved_bytes << ", allocated "
        << stats_.allocated_bytes << "; recount " << reserved << ", "
        << allocated << "\n";
  if (reserved > limit_)
    why << "reserved " << reserved << " over the limit " << limit_ << "\n";
  return why.str();
}

}  // namespace tapeflow
