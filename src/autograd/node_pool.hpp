#pragma once
#include <cstddef>
#include <cstdlib>
#include <new>
#include <vector>

namespace tapeflow::autograd {

/**
 * Thread-local free lists for tape nodes. A tape frees hundreds of
 * same-sized nodes at once; glibc's per-thread cache keeps only 7 blocks per
 * size, so without this every training step would pay full free()/malloc()
 * for most of its nodes.
 */
class NodePool {
 public:
  static constexpr size_t kGranule = 64;
  static constexpr size_t kMaxBytes = 1024;
  static constexpr size_t kMaxCached = 4096;  // per size class

  static void* allocate(size_t bytes) {
    if (bytes > kMaxBytes) return ::operator new(bytes);
    auto& list = local().lists[index(bytes)];
    if (list.empty()) return ::operator new(round(bytes));
    void* p = list.back();
    list.pop_back();
    return p;
  }
  static void deallocate(void* p, size_t bytes) {
    if (bytes > kMaxBytes) return ::operator delete(p);
    auto& list = local().lists[index(bytes)];
    if (list.size() >= kMaxCached) return ::operator delete(p);
    list.push_back(p);
  }

 private:
  static size_t index(size_t bytes) { return (bytes - 1) / kGranule; }
  static size_t round(size_t bytes) { return (index(bytes) + 1) * kGranule; }
  struct Lists {
    std::vector<void*> lists[kMaxBytes / kGranule];
    ~Lists() {
      for (auto& l : lists)
        for (void* p : l) ::operator delete(p);
    }
  };
  /** This thread's lists (defined in tape.cpp). */
  static Lists& local();
};

/** std::allocator-shaped adapter for std::allocate_shared. */
template <class T>
struct NodeAllocator {
  using value_type = T;
  NodeAllocator() = default;
  template <class U>
  NodeAllocator(const NodeAllocator<U>&) {}
  T* allocate(size_t n) {
    return static_cast<T*>(NodePool::allocate(n * sizeof(T)));
  }
  void deallocate(T* p, size_t n) { NodePool::deallocate(p, n * sizeof(T)); }
  template <class U>
  bool operator==(const NodeAllocator<U>&) const {
    return true;
  }
};

}  // namespace tapeflow::autograd
