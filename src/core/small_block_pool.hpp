#pragma once
#include <cstddef>
#include <cstdint>
#include <new>

namespace tapeflow {

/**
 * Thread-local free lists for the small objects every op makes and drops:
 * the state behind a tensor handle (TensorImpl, Storage) and tape nodes. A
 * glibc malloc/free pair costs ~130 instructions and its per-thread cache
 * keeps only 7 blocks per size (a tape frees hundreds of nodes at once);
 * popping and pushing a list here costs ~10. A block freed on another thread
 * joins that thread's lists. When a thread ends, its lists go back to the
 * system and later frees on it (static tensors destroyed at exit) go
 * straight to operator delete.
 */
class SmallBlockPool {
 public:
  static constexpr size_t kGranule = 64;
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  // Every block straight from and to the sanitizer's allocator, so that a
  // use after free or a race on a reused block is still reported.
  static constexpr size_t kMaxBytes = 0;
#else
  static constexpr size_t kMaxBytes = 1024;
#endif
  /** What one size class may hold per thread: at most 4096 blocks. */
  static constexpr size_t kMaxCachedBytes = size_t{256} << 10;
  static constexpr uint32_t kMaxBlocks = 4096;

  static void* allocate(size_t bytes) {
    if (bytes - 1 >= kMaxBytes) return ::operator new(bytes);
    Lists& lists = t_lists;
    const size_t c = index(bytes);
    FreeBlock* block = lists.head[c];
    if (!block) [[unlikely]] {
      // A thread's first miss opens its lists while it is surely alive.
      if (!lists.open) adopt_thread();
      return ::operator new((c + 1) * kGranule);
    }
    lists.head[c] = block->next;
    --lists.count[c];
    return block;
  }

  static void deallocate(void* p, size_t bytes) {
    if (bytes - 1 >= kMaxBytes) return ::operator delete(p);
    Lists& lists = t_lists;
    const size_t c = index(bytes);
    if (lists.count[c] >= lists.limit[c]) [[unlikely]] {
      if (lists.open || !adopt_thread()) return ::operator delete(p);
    }
    lists.head[c] = new (p) FreeBlock{lists.head[c]};
    ++lists.count[c];
  }

  /** Blocks of `bytes`' size class cached on the calling thread. */
  static uint32_t cached(size_t bytes) {
    return bytes - 1 >= kMaxBytes ? 0 : t_lists.count[index(bytes)];
  }
  /** The most blocks of `bytes`' size class one thread keeps. */
  static constexpr uint32_t max_cached(size_t bytes) {
    if (bytes - 1 >= kMaxBytes) return 0;
    const size_t fit = kMaxCachedBytes / ((index(bytes) + 1) * kGranule);
    return fit < kMaxBlocks ? static_cast<uint32_t>(fit) : kMaxBlocks;
  }

 private:
  static constexpr size_t kClasses = kMaxBytes ? kMaxBytes / kGranule : 1;
  static constexpr size_t index(size_t bytes) {
    return (bytes - 1) / kGranule;
  }

  struct FreeBlock {
    FreeBlock* next;
  };
  // Trivially destructible and zero-initialised, so that it stays readable
  // while the thread's other thread-locals are destroyed. The limits are 0
  // until the thread opens its lists (registering their cleanup) and again
  // after the cleanup ran; `ended` keeps them closed from then on.
  struct Lists {
    FreeBlock* head[kClasses];
    uint32_t count[kClasses];
    uint32_t limit[kClasses];
    bool open;
    bool ended;
  };
#ifdef __CUDACC__  // nvcc does not take the attribute (no op path there)
  static thread_local Lists t_lists;
#else
  static constinit thread_local Lists t_lists
      __attribute__((tls_model("initial-exec")));
#endif

  /**
   * Opens this thread's lists and registers their cleanup; false once the
   * cleanup ran (the thread is ending).
   */
  static bool adopt_thread();
};

/** std::allocator-shaped adapter for std::allocate_shared. */
template <class T>
struct SmallBlockAllocator {
  // The blocks come from operator new without an alignment argument.
  static_assert(alignof(T) <= __STDCPP_DEFAULT_NEW_ALIGNMENT__);
  using value_type = T;
  SmallBlockAllocator() = default;
  template <class U>
  SmallBlockAllocator(const SmallBlockAllocator<U>&) {}
  T* allocate(size_t n) {
    return static_cast<T*>(SmallBlockPool::allocate(n * sizeof(T)));
  }
  void deallocate(T* p, size_t n) {
    SmallBlockPool::deallocate(p, n * sizeof(T));
  }
  template <class U>
  bool operator==(const SmallBlockAllocator<U>&) const {
    return true;
  }
};

}  // namespace tapeflow
