// The thread-local free lists behind tensor handles and tape nodes: reuse,
// the per-class cap, frees from other threads, the blocks given back when a
// thread ends, and frees after that (thread-locals destroyed later).
#include <doctest/doctest.h>

#include <atomic>
#include <cstdlib>
#include <new>
#include <thread>
#include <vector>

#include "core/small_block_pool.hpp"
#include "tapeflow/tapeflow.hpp"

using tapeflow::SmallBlockPool;

// Every operator new/delete of the process (libtapeflow's too) is counted,
// so that a test can see blocks go back to the system. They are malloc and
// free underneath, which g++ then sees paired with delete and new.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
namespace {
std::atomic<int64_t> g_news{0}, g_deletes{0};
}  // namespace

void* operator new(size_t n) {
  ++g_news;
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept {
  if (p) ++g_deletes;
  std::free(p);
}
void operator delete(void* p, size_t) noexcept {
  if (p) ++g_deletes;
  std::free(p);
}

namespace {

constexpr size_t kSize = 200;  // the 256-byte class
constexpr bool kPooled = SmallBlockPool::kMaxBytes >= kSize;

}  // namespace

TEST_CASE("a freed block is handed out again on its thread") {
  if (!kPooled) return;  // sanitizer builds bypass the pool
  std::thread([] {
    void* p = SmallBlockPool::allocate(kSize);
    SmallBlockPool::deallocate(p, kSize);
    CHECK(SmallBlockPool::cached(kSize) == 1);
    // Any size of the same class takes it; another class does not.
    void* other = SmallBlockPool::allocate(kSize - 150);
    CHECK(other != p);
    CHECK(SmallBlockPool::cached(kSize) == 1);
    void* q = SmallBlockPool::allocate(kSize + 50);
    CHECK(q == p);
    CHECK(SmallBlockPool::cached(kSize) == 0);
    SmallBlockPool::deallocate(q, kSize + 50);
    SmallBlockPool::deallocate(other, kSize - 150);
  }).join();
}

TEST_CASE("each class keeps at most max_cached blocks per thread") {
  if (!kPooled) return;
  for (size_t size : {size_t{64}, kSize, SmallBlockPool::kMaxBytes}) {
    CAPTURE(size);
    const uint32_t cap = SmallBlockPool::max_cached(size);
    CHECK(cap * ((size + 63) / 64 * 64) <= SmallBlockPool::kMaxCachedBytes);
    std::thread([size, cap] {
      std::vector<void*> blocks(cap + 10);
      for (void*& p : blocks) p = SmallBlockPool::allocate(size);
      const int64_t deletes = g_deletes;
      for (void* p : blocks) SmallBlockPool::deallocate(p, size);
      CHECK(SmallBlockPool::cached(size) == cap);
      CHECK(g_deletes - deletes == 10);
    }).join();
  }
}

TEST_CASE("sizes outside the classes go straight to the system") {
  std::thread([] {
    for (size_t size : {size_t{0}, SmallBlockPool::kMaxBytes + 1}) {
      const int64_t news = g_news, deletes = g_deletes;
      void* p = SmallBlockPool::allocate(size);
      SmallBlockPool::deallocate(p, size);
      CHECK(g_news - news == 1);
      CHECK(g_deletes - deletes == 1);
    }
  }).join();
}

TEST_CASE("blocks freed on another thread join that thread's lists") {
  if (!kPooled) return;
  std::vector<void*> made(100);
  std::thread([&] {
    for (void*& p : made) p = SmallBlockPool::allocate(kSize);
  }).join();
  std::thread([&] {
    for (void* p : made) SmallBlockPool::deallocate(p, kSize);
    CHECK(SmallBlockPool::cached(kSize) == made.size());
  }).join();
}

TEST_CASE("a thread's cached blocks go back to the system when it ends") {
  const int64_t deletes = g_deletes;
  std::thread([] {
    std::vector<void*> blocks(50);
    for (void*& p : blocks) p = SmallBlockPool::allocate(kSize);
    for (void* p : blocks) SmallBlockPool::deallocate(p, kSize);
  }).join();
  // 50 blocks, plus what the thread's own start and end freed.
  CHECK(g_deletes - deletes >= 50);
  if (kPooled) CHECK(g_deletes - deletes <= 60);
}

TEST_CASE("tensor handles and their storage come from the pool") {
  if (!kPooled) return;
  std::thread([] {
    auto cached_total = [] {
      uint32_t n = 0;
      for (size_t size = 64; size <= SmallBlockPool::kMaxBytes; size += 64)
        n += SmallBlockPool::cached(size);
      return n;
    };
    const uint32_t before = cached_total();
    { const tapeflow::Tensor t = tapeflow::zeros({3}); }
    CHECK(cached_total() - before >= 2);  // TensorImpl and Storage
  }).join();
}

namespace {

std::atomic<int64_t> g_cached_after_cleanup{-1};

/**
 * Holds a pooled block until the thread's thread-locals are destroyed.
 * Constructed before the pool's cleanup registers, so destroyed after it.
 */
struct LateHolder {
  void* block = nullptr;
  ~LateHolder() {
    SmallBlockPool::deallocate(block, kSize);
    g_cached_after_cleanup = SmallBlockPool::cached(kSize);
  }
};

}  // namespace

TEST_CASE("a free after the thread's cleanup goes straight to the system") {
  std::thread([] {
    thread_local LateHolder holder;
    holder.block = SmallBlockPool::allocate(kSize);
    SmallBlockPool::deallocate(SmallBlockPool::allocate(kSize), kSize);
    if (kPooled) CHECK(SmallBlockPool::cached(kSize) == 1);
  }).join();
  CHECK(g_cached_after_cleanup == 0);
}
