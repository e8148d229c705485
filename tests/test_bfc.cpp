// The device memory arena (src/core/bfc_arena.hpp) on a fake segment source:
// fake addresses, so an 80 GiB device costs nothing. White-box.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <iterator>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/bfc_arena.hpp"
#include "support/check.hpp"
#include "support/fake_segment_source.hpp"

using testing::expect_error;
using testing::FakeSource;
using tpf::BfcArena;

namespace {

constexpr size_t KiB = size_t{1} << 10, MiB = size_t{1} << 20,
                 GiB = size_t{1} << 30;

struct Arena {
  FakeSource* source;
  std::unique_ptr<BfcArena> arena;
  explicit Arena(tpf::config::GpuMemoryOptions o = {}, size_t total = 80 * GiB,
                 size_t free = 80 * GiB) {
    auto s = std::make_unique<FakeSource>(total, free);
    source = s.get();
    arena = std::make_unique<BfcArena>(std::move(s), o);
  }
  BfcArena* operator->() { return arena.get(); }
  void check() {
    CHECK_MESSAGE(arena->check_invariants().empty(), arena->check_invariants());
  }
};

uintptr_t at(void* p) {
  return reinterpret_cast<uintptr_t>(p);
}

}  // namespace

TEST_CASE("segment sizes and bins follow PyTorch and TensorFlow") {
  CHECK(tpf::bfc_segment_size(512) == 2 * MiB);
  CHECK(tpf::bfc_segment_size(1 * MiB) == 2 * MiB);
  CHECK(tpf::bfc_segment_size(1 * MiB + 512) == 20 * MiB);
  CHECK(tpf::bfc_segment_size(10 * MiB) == 20 * MiB);
  CHECK(tpf::bfc_segment_size(10 * MiB + 512) == 12 * MiB);
  CHECK(tpf::bfc_segment_size(33 * MiB) == 34 * MiB);
  CHECK(tpf::bfc_bin(256) == 0);
  CHECK(tpf::bfc_bin(512) == 1);
  CHECK(tpf::bfc_bin(1023) == 1);
  CHECK(tpf::bfc_bin(1 * MiB) == 12);
  CHECK(tpf::bfc_bin(64 * GiB) == BfcArena::kBins - 1);
}

TEST_CASE("small requests share 2 MiB segments; chunks split and merge") {
  Arena a;
  std::vector<void*> p;
  for (int i = 0; i < 4; ++i) p.push_back(a->allocate(512 * KiB));
  a.check();
  auto s = a->stats();
  CHECK(s.num_segments == 1);
  CHECK(s.reserved_bytes == 2 * MiB);
  CHECK(s.allocated_bytes == 2 * MiB);
  CHECK(s.largest_free_bytes == 0);
  for (int i = 1; i < 4; ++i) CHECK(at(p[i]) == at(p[i - 1]) + 512 * KiB);
  // Requests round up to 512 B.
  void* odd = a->allocate(1);
  CHECK(a->stats().num_segments == 2);
  CHECK(a->stats().allocated_bytes == 2 * MiB + 512);
  // Freeing the middle two merges them into one 1 MiB chunk.
  a->deallocate(p[1], 512 * KiB);
  a->deallocate(p[2], 512 * KiB);
  a.check();
  CHECK(a->stats().largest_free_bytes == 2 * MiB - 512);
  void* mid = a->allocate(1 * MiB);
  CHECK(at(mid) == at(p[1]));
  a.check();
  for (void* q : {p[0], mid, p[3], odd}) a->deallocate(q, 0);
  a.check();
  s = a->stats();
  CHECK(s.allocated_bytes == 0);
  CHECK(s.cached_bytes == 4 * MiB);
  CHECK(s.peak_bytes == 2 * MiB + 512);
  CHECK(s.num_allocs == 6);
  CHECK(s.num_fresh == 2);
}

TEST_CASE("best fit: the smallest free chunk that holds the request") {
  Arena a;
  // Holes of 4 KiB and 1 KiB, fenced by chunks in use.
  void* fence0 = a->allocate(512);
  void* four = a->allocate(4 * KiB);
  void* fence1 = a->allocate(512);
  void* one = a->allocate(1 * KiB);
  void* fence2 = a->allocate(512);
  a->deallocate(four, 0);
  a->deallocate(one, 0);
  CHECK(at(a->allocate(1 * KiB)) == at(one));
  CHECK(at(a->allocate(3 * KiB)) == at(four));
  a.check();
  (void)fence0, (void)fence1, (void)fence2;
}

TEST_CASE("large requests: 20 MiB segments, then their own near the limit") {
  Arena a({.memory_limit_bytes = 30 * MiB});
  void* p = a->allocate(3 * MiB);
  CHECK(a->stats().reserved_bytes == 20 * MiB);
  void* q = a->allocate(17 * MiB);  // the rest of that segment, exactly
  CHECK(a->stats().num_segments == 1);
  // Another 20 MiB segment would pass the limit: one of 4 MiB instead.
  void* r = a->allocate(3 * MiB);
  CHECK(a->stats().num_segments == 2);
  CHECK(a->stats().reserved_bytes == 24 * MiB);
  a.check();
  for (void* x : {p, q, r}) a->deallocate(x, 0);
}

TEST_CASE("the limit caps reserved bytes; the refusal says why") {
  Arena a({.per_process_gpu_memory_fraction = 0.5}, 100 * MiB, 90 * MiB);
  CHECK(a->limit_bytes() == 50 * MiB);
  void* x = a->allocate(20 * MiB);
  void* y = a->allocate(20 * MiB);
  expect_error<tpf::ResourceExhaustedError>(
      [&] { (void)a->allocate(20 * MiB); },
      "[allocate] expected 20.00 MiB more on fake:0, got out of memory: in "
      "use 40.00 MiB, cached 0 B (largest free 0 B, fragmentation 0%), "
      "reserved 40.00 MiB of a 50.00 MiB limit (fraction 0.5 of 100.00 MiB), "
      "device free 50.00 MiB; wholly free segments were returned and the "
      "request retried");
  CHECK(a->stats().num_ooms == 1);
  CHECK(a->stats().limit_bytes == 50 * MiB);
  CHECK(a.source->syncs == 1);
  a.check();
  a->deallocate(x, 0);
  a->deallocate(y, 0);
}

TEST_CASE("a request past half the address space is refused, not wrapped") {
  Arena a;
  expect_error<tpf::ResourceExhaustedError>(
      [&] { (void)a->allocate(SIZE_MAX - 100); },
      "[allocate] expected 16777216.00 TiB more on fake:0");
  CHECK(a->stats().num_ooms == 1);
}

TEST_CASE("a refusal frees wholly free segments and retries once") {
  Arena a({.memory_limit_bytes = 21 * MiB});
  a->deallocate(a->allocate(512 * KiB), 0);  // a cached 2 MiB segment
  CHECK(a->stats().reserved_bytes == 2 * MiB);
  void* p = a->allocate(20 * MiB);  // 2 + 20 > 21: the small one goes back
  CHECK(a.source->syncs == 1);
  CHECK(a->stats().num_segments == 1);
  CHECK(a->stats().reserved_bytes == 20 * MiB);
  CHECK(a->stats().num_ooms == 0);
  a.check();
  // The device itself may run out below the limit: the same path.
  a.source->refuse_above = 1 * MiB;
  expect_error<tpf::ResourceExhaustedError>(
      [&] { (void)a->allocate(512); },
      "[allocate] expected 512 B more on fake:0");
  CHECK(a.source->syncs == 2);
  a->deallocate(p, 0);
}

TEST_CASE("empty_cache returns the wholly free segments only") {
  Arena a;
  void* keep = a->allocate(512 * KiB);
  void* go = a->allocate(5 * MiB);
  a->deallocate(go, 0);
  CHECK(a->stats().num_segments == 2);
  a->empty_cache();
  CHECK(a->stats().num_segments == 1);
  CHECK(a->stats().reserved_bytes == 2 * MiB);
  CHECK(a->stats().peak_reserved_bytes == 22 * MiB);
  CHECK(a.source->live.size() == 1);
  a.check();
  a->deallocate(keep, 0);
}

TEST_CASE("allow_growth off reserves the cap at first use and carves from it") {
  Arena a({.per_process_gpu_memory_fraction = 0.5, .allow_growth = false});
  CHECK_FALSE(a->allow_growth());
  CHECK(a->stats().reserved_bytes == 40 * GiB);
  CHECK(a->stats().num_segments == 1);
  // Small requests too: no 2 MiB segment fits beside the reservation.
  void* small = a->allocate(4 * KiB);
  void* large = a->allocate(3 * GiB);
  CHECK(a->stats().num_segments == 1);
  a.check();
  a->deallocate(small, 0);
  a->deallocate(large, 0);
  // It holds what the device has free, less 512 MiB, backing off by 10%.
  Arena b({.allow_growth = false}, 16 * GiB, 8 * GiB);
  CHECK(b->stats().reserved_bytes == 8 * GiB - 512 * MiB);
  auto s = std::make_unique<FakeSource>(16 * GiB, 16 * GiB);
  s->refuse_above = 10 * GiB;
  BfcArena c(std::move(s), {.allow_growth = false});
  CHECK(c.stats().reserved_bytes <= 10 * GiB);
  CHECK(c.stats().reserved_bytes > 9 * GiB);
}

TEST_CASE("TF_FORCE_GPU_ALLOW_GROWTH overrides the option") {
  setenv("TF_FORCE_GPU_ALLOW_GROWTH", "false", 1);
  CHECK_FALSE(Arena({.allow_growth = true})->allow_growth());
  setenv("TF_FORCE_GPU_ALLOW_GROWTH", "true", 1);
  CHECK(Arena({.allow_growth = false})->allow_growth());
  unsetenv("TF_FORCE_GPU_ALLOW_GROWTH");
  CHECK_FALSE(Arena({.allow_growth = false})->allow_growth());
}

TEST_CASE("memory_limit_bytes overrides the fraction and is named") {
  Arena a(
      {.per_process_gpu_memory_fraction = 0.1, .memory_limit_bytes = 4 * MiB});
  CHECK(a->limit_bytes() == 4 * MiB);
  expect_error<tpf::ResourceExhaustedError>(
      [&] { (void)a->allocate(8 * MiB); },
      "[allocate] expected 8.00 MiB more on fake:0, got out of memory: in use "
      "0 B, cached 0 B (largest free 0 B, fragmentation 0%), reserved 0 B of "
      "a 4.00 MiB limit (memory_limit_bytes)");
}

TEST_CASE("fragmentation: 1 - largest free / cached") {
  Arena a({.memory_limit_bytes = 2 * MiB});
  std::vector<void*> p;
  for (int i = 0; i < 8; ++i) p.push_back(a->allocate(256 * KiB));
  for (int i = 0; i < 8; i += 2) a->deallocate(p[i], 0);
  // 1 MiB cached in four 256 KiB holes: 75% fragmented.
  try {
    (void)a->allocate(512 * KiB);
    FAIL("expected a refusal");
  } catch (const tpf::ResourceExhaustedError& e) {
    CHECK(std::string(e.what()).find("cached 1.00 MiB (largest free 256.00 "
                                     "KiB, fragmentation 75%)") !=
          std::string::npos);
  }
  for (int i = 1; i < 8; i += 2) a->deallocate(p[i], 0);
  a.check();
}

TEST_CASE("a million random steps keep every invariant") {
  Arena a({.memory_limit_bytes = 1 * GiB});
  std::mt19937_64 rng(20);
  std::map<uintptr_t, size_t> live;  // address -> rounded size
  std::uniform_real_distribution<double> log_size(0.0, 26.0);  // 1 B .. 64 MiB
  size_t ooms = 0;
  for (int step = 0; step < 1'000'000; ++step) {
    if (live.empty() || rng() % 100 < 52) {
      const size_t n = static_cast<size_t>(std::exp2(log_size(rng)));
      try {
        const uintptr_t p = at(a->allocate(n));
        const size_t size = (n + 511) / 512 * 512;
        // No overlap with a live block on either side.
        const auto next = live.lower_bound(p);
        if (next != live.end()) REQUIRE(p + size <= next->first);
        if (next != live.begin()) {
          const auto prev = std::prev(next);
          REQUIRE(prev->first + prev->second <= p);
        }
        live.emplace(p, size);
      } catch (const tpf::ResourceExhaustedError&) {
        ++ooms;
      }
    } else {
      auto it = live.begin();
      std::advance(it, rng() % live.size());
      a->deallocate(reinterpret_cast<void*>(it->first), it->second);
      live.erase(it);
    }
    if (step % 20'000 == 0) {
      const std::string why = a->check_invariants();
      REQUIRE_MESSAGE(why.empty(), "step " << step << ": " << why);
    }
  }
  a.check();
  size_t in_use = 0;
  for (const auto& [p, size] : live) in_use += size;
  // A chunk too small to split is handed out whole: in use counts it all.
  CHECK(a->stats().allocated_bytes >= in_use);
  CHECK(a->stats().allocated_bytes <= in_use + live.size() * 1 * MiB);
  CHECK(a->stats().num_ooms == ooms);
  MESSAGE("refusals: " << ooms << ", live blocks at the end: " << live.size());
  for (const auto& [p, size] : live)
    a->deallocate(reinterpret_cast<void*>(p), size);
  CHECK(a->stats().allocated_bytes == 0);
  a->empty_cache();
  CHECK(a->stats().reserved_bytes == 0);
  CHECK(a.source->live.empty());
}
