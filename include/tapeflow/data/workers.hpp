#pragma once
// The worker threads of a threaded stage (parallel map, parallel
// interleave), always joined by their owner.
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

namespace tapeflow::data::detail {

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
   * Starts n threads running work(). If one fails to start, the started
   * ones are stopped and joined before the exception goes on: no destructor
   * runs after a throwing constructor, and a joinable thread would
   * terminate the program.
   */
  template <class Work>
  void start(int64_t n, Work work) {
    threads_.reserve(static_cast<size_t>(n));
    try {
      for (int64_t i = 0; i < n; ++i) threads_.emplace_back(work);
    } catch (...) {
      stop_and_join();
      throw;
    }
  }

  /** Sets the stop flag, wakes every waiting worker and joins them all. */
  void stop_and_join() {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    wake_.notify_all();
    for (auto& t : threads_) t.join();
    threads_.clear();
  }

  bool empty() const { return threads_.empty(); }

 private:
  std::mutex& mu_;
  bool& stop_;
  std::condition_variable& wake_;
  std::vector<std::thread> threads_;
};

}  // namespace tapeflow::data::detail
