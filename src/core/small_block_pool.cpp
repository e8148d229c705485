#include "core/small_block_pool.hpp"

namespace tapeflow {

constinit thread_local SmallBlockPool::Lists SmallBlockPool::t_lists
    __attribute__((tls_model("initial-exec"))) = {};

bool SmallBlockPool::adopt_thread() {
  Lists& lists = t_lists;
  if (lists.ended) return false;
  if (lists.open) return true;
  // Gives the thread's cached blocks back when the thread ends; the first
  // pass here registers its destructor with the thread.
  struct Cleanup {
    ~Cleanup() {
      Lists& ending = t_lists;
      ending.open = false;
      ending.ended = true;
      for (size_t c = 0; c < kClasses; ++c) {
        ending.limit[c] = 0;
        while (FreeBlock* block = ending.head[c]) {
          ending.head[c] = block->next;
          ::operator delete(block);
        }
        ending.count[c] = 0;
      }
    }
  };
  thread_local Cleanup cleanup;
  for (size_t c = 0; c < kClasses; ++c)
    lists.limit[c] = max_cached((c + 1) * kGranule);
  lists.open = true;
  return true;
}

}  // namespace tapeflow
