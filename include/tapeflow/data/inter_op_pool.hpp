#pragma once
// The inter-op thread pool (config::set_inter_op_threads): one per process,
// shared by the parallel maps of every pipeline, so that four pipelines with
// num_parallel_calls = 8 run their map functions on inter_op_threads()
// threads rather than on 32 threads of their own. As in tf.data, the pool runs
// only the function calls; each parallel map keeps one runner thread that
// pulls from upstream and schedules them.
// Header-only, so that the pipeline headers need no libtapeflow symbol.
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "tapeflow/core/error.hpp"

namespace tapeflow::data::detail {

/** config::set_inter_op_threads' value; 0: not set (one per core). */
inline std::atomic<int> g_inter_op_threads{0};
/** Set once the pool exists: its size can no longer change. */
inline std::atomic<int> g_inter_op_pool_size{0};

inline int inter_op_threads_wanted() {
  const int n = g_inter_op_threads.load();
  return n > 0 ? n
               : static_cast<int>(
                     std::max(1u, std::thread::hardware_concurrency()));
}

class InterOpPool {
 public:
  /**
   * The pool, started at the first call with inter_op_threads() threads.
   * Never destroyed: its threads may still be waiting when static objects
   * go at exit.
   */
  static InterOpPool& instance() {
    static InterOpPool* pool = new InterOpPool(inter_op_threads_wanted());
    return *pool;
  }
  InterOpPool(const InterOpPool&) = delete;
  InterOpPool& operator=(const InterOpPool&) = delete;

  /** Runs `task` on a pool thread; tasks must not throw. */
  void submit(std::function<void()> task) {
    {
      std::lock_guard lock(mu_);
      tasks_.push_back(std::move(task));
    }
    wake_.notify_one();
  }

  /** Runs the oldest queued task on the calling thread; false if none. */
  bool run_one() {
    std::function<void()> task;
    {
      std::lock_guard lock(mu_);
      if (tasks_.empty()) return false;
      task = std::move(tasks_.front());
      tasks_.pop_front();
    }
    task();
    return true;
  }

  /** True on the pool's own threads. */
  static bool& on_pool_thread() {
    thread_local bool on = false;
    return on;
  }

 private:
  // As many of the n threads as the system will start: fewer where it
  // refuses some (a process or container thread limit), an error where it
  // refuses all.
  explicit InterOpPool(int n) {
    int started = 0;
    for (; started < n; ++started) {
      try {
        start_thread();
      } catch (const std::system_error& e) {
        if (started > 0) break;
        throw ResourceExhaustedError(
            std::string("[inter_op_pool] expected to start a thread, got ") +
            e.what());
      }
    }
    g_inter_op_pool_size = started;
  }

  void start_thread() {
    std::thread([this] {
      on_pool_thread() = true;
      for (;;) {
        std::function<void()> task;
        {
          std::unique_lock lock(mu_);
          wake_.wait(lock, [&] { return !tasks_.empty(); });
          task = std::move(tasks_.front());
          tasks_.pop_front();
        }
        task();
      }
    }).detach();
  }

  std::mutex mu_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> tasks_;
};

/**
 * One cv.wait(lock) of a loop that checks its own condition, except that a
 * pool thread (a map function that reads a pipeline of its own) runs a
 * queued task instead, or waits a millisecond at most: what it waits for
 * may be queued behind it, with every pool thread waiting as it does.
 */
inline void wait_once_helping_pool(std::unique_lock<std::mutex>& lock,
                                   std::condition_variable& cv) {
  if (!InterOpPool::on_pool_thread()) {
    cv.wait(lock);
    return;
  }
  lock.unlock();
  const bool ran = InterOpPool::instance().run_one();
  lock.lock();
  // A millisecond as the duration template <condition_variable> declares
  // for wait_for: <chrono> itself costs every user ~0.07 s of compiling.
  if (!ran) cv.wait_for(lock, std::chrono::duration<long, std::milli>(1));
}

/** cv.wait(lock, done), helping the pool as wait_once_helping_pool does. */
template <class Done>
void wait_helping_pool(std::unique_lock<std::mutex>& lock,
                       std::condition_variable& cv, Done done) {
  while (!done()) wait_once_helping_pool(lock, cv);
}

}  // namespace tapeflow::data::detail
