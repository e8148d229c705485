#pragma once
// The worker threads of a threaded stage (parallel map, parallel
// interleave), always joined by their owner.
#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <new>
#include <string>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "tapeflow/core/error.hpp"
#include "tapeflow/data/inter_op_pool.hpp"

namespace tapeflow::data::detail {

/**
 * The most threads one stage starts. Each runs one call at a time, and a
 * stage's calls in flight past this many would not run any faster on any
 * machine: the data an interleave over 2^40 calls reads decides the work.
 */
inline constexpr int64_t kMostStageThreads = 256;

/**
 * A thread running work. A system that refuses it (a thread or memory
 * limit) is a ResourceExhaustedError naming the stage, not a bare
 * std::system_error from deep inside an iterator.
 */
template <class Work>
std::thread start_thread(const char* op, Work&& work) {
  try {
    return std::thread(std::forward<Work>(work));
  } catch (const std::system_error& e) {
    throw ResourceExhaustedError(std::string("[") + op +
                                 "] expected to start a thread, got " +
                                 e.what());
  } catch (const std::bad_alloc&) {
    throw ResourceExhaustedError(std::string("[") + op +
                                 "] expected to start a thread, got an "
                                 "allocation failure (out of memory)");
  }
}

/**
 * Threads that all run the owner's work loop until the owner's stop flag
 * (guarded by its mutex) is set. A stage starts them in its constructor and
 * calls stop_and_join() in its destructor, and holds this as its last
 * member, so the threads are gone before the state they use.
 */
class Workers {
 public:
  Workers(std::mutex& mu, bool& stop, std::condition_variable& wake)
      : mu_(mu), stop_(stop), wake_(wake) {}

  /**
   * Starts n threads running work(), at most kMostStageThreads: n is a bound
   * on the calls in flight, which more idle threads would not raise. If one
   * fails to start, the started ones are stopped and joined before the
   * exception goes on: no destructor runs after a throwing constructor, and
   * a joinable thread would terminate the program.
   */
  template <class Work>
  void start(const char* op, int64_t n, Work work) {
    n = std::min(n, kMostStageThreads);
    threads_.reserve(static_cast<size_t>(n));
    const auto counted = [this, work] {
      work();
      std::lock_guard lock(mu_);
      --running_;
      exited_.notify_all();
    };
    try {
      for (int64_t i = 0; i < n; ++i) {
        // Counted before it starts: stop_and_join must not miss it.
        {
          std::lock_guard lock(mu_);
          ++running_;
        }
        try {
          threads_.push_back(start_thread(op, counted));
        } catch (...) {
          std::lock_guard lock(mu_);
          --running_;
          throw;
        }
      }
    } catch (...) {
      stop_and_join();
      throw;
    }
  }

  /**
   * Sets the stop flag, wakes every waiting worker and joins them all. On a
   * pool thread (a map function leaving its own pipeline early) it runs
   * pool tasks until they have exited: a worker may be waiting on a call
   * queued behind this one.
   */
  void stop_and_join() {
    std::unique_lock lock(mu_);
    stop_ = true;
    wake_.notify_all();
    wait_helping_pool(lock, exited_, [&] { return running_ == 0; });
    lock.unlock();
    for (auto& t : threads_) t.join();
    threads_.clear();
  }

  bool empty() const { return threads_.empty(); }

 private:
  std::mutex& mu_;
  bool& stop_;
  std::condition_variable& wake_;
  std::condition_variable exited_;
  int64_t running_ = 0;  // started and not yet done, under mu_
  std::vector<std::thread> threads_;
};

}  // namespace tapeflow::data::detail
