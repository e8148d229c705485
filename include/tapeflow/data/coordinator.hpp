#pragma once
// TensorFlow 1's tf.train.Coordinator: threads that stop together, the first
// error of any of them rethrown where they are joined. Header-only (it
// depends on the error types alone), like the queues QueueRunner feeds, and
// not part of <tapeflow/data.hpp>: include it where threads are wanted.
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "tapeflow/core/error.hpp"

namespace tapeflow::train {

/** Coordinator::join found threads still running after the grace period. */
class ThreadsStillRunningError : public Error {
  using Error::Error;
};

namespace detail {

/**
 * What a Coordinator and its threads share; threads hold it too, so that a
 * thread join() gave up on can still finish safely.
 */
struct CoordinatorState {
  std::mutex mu;
  std::condition_variable changed;  // stop requested or a thread ended
  bool stop = false;
  std::exception_ptr error;
  std::map<uint64_t, std::function<void()>> on_stop;
  uint64_t next_callback = 1;

  bool should_stop() {
    std::lock_guard lock(mu);
    return stop;
  }

  void request_stop(std::exception_ptr e) {
    std::map<uint64_t, std::function<void()>> callbacks;
    {
      std::lock_guard lock(mu);
      if (e && !error && !is_clean_stop(e)) error = e;
      if (!stop) {
        stop = true;
        callbacks.swap(on_stop);
      }
    }
    changed.notify_all();
    for (auto& [id, callback] : callbacks) callback();
  }

  void remove_stop_callback(uint64_t id) {
    std::lock_guard lock(mu);
    on_stop.erase(id);
  }

  // TensorFlow's clean_stop_exception_types: the end of the input is how
  // input threads stop, not a failure.
  static bool is_clean_stop(std::exception_ptr e) {
    try {
      std::rethrow_exception(e);
    } catch (const OutOfRangeError&) {
      return true;
    } catch (...) {
      return false;
    }
  }
};

}  // namespace detail

template <class Queue>
class QueueRunner;

/**
 * A thread started by Coordinator::make_thread: its body runs under the
 * coordinator's stop_on_exception. Destroying a started, unjoined one
 * requests a stop and joins it (as std::jthread), so that it never
 * terminates the program.
 */
class CoordinatedThread {
 public:
  CoordinatedThread() = default;
  CoordinatedThread(CoordinatedThread&& other) noexcept = default;
  CoordinatedThread& operator=(CoordinatedThread&& other) noexcept {
    if (this != &other) {
      finish();
      state_ = std::move(other.state_);
      body_ = std::move(other.body_);
      done_ = std::move(other.done_);
      thread_ = std::move(other.thread_);
    }
    return *this;
  }
  ~CoordinatedThread() { finish(); }

  /** Starts the body; a ValueError if it was started already. */
  void start() {
    if (!body_)
      throw ValueError(
          "[CoordinatedThread::start] expected a thread not started yet, got "
          "one started already");
    thread_ =
        std::thread([state = state_, body = std::move(body_), done = done_] {
          try {
            body();
          } catch (...) {
            state->request_stop(std::current_exception());
          }
          {
            std::lock_guard lock(state->mu);
            *done = true;
          }
          state->changed.notify_all();
        });
    body_ = nullptr;
  }

 private:
  friend class Coordinator;
  CoordinatedThread(std::shared_ptr<detail::CoordinatorState> state,
                    std::function<void()> body)
      : state_(std::move(state)),
        body_(std::move(body)),
        done_(std::make_shared<bool>(false)) {}

  void finish() {
    if (!thread_.joinable()) return;
    state_->request_stop(nullptr);
    thread_.join();
  }

  std::shared_ptr<detail::CoordinatorState> state_;
  std::function<void()> body_;  // until started
  std::shared_ptr<bool> done_;  // under state_->mu
  std::thread thread_;
};

/**
 * Stops a group of threads together (tf.train.Coordinator). Threads poll
 * should_stop(); any of them (or the main loop) calls request_stop(),
 * with the exception that ended it if any; join() waits for them and
 * rethrows the first such exception. An OutOfRangeError is a clean stop
 * (input threads end that way), recorded as no error.
 */
class Coordinator {
 public:
  Coordinator() : state_(std::make_shared<detail::CoordinatorState>()) {}
  Coordinator(const Coordinator&) = delete;
  Coordinator& operator=(const Coordinator&) = delete;

  /** Asks every thread to stop; runs the stop callbacks (once). */
  void request_stop() { state_->request_stop(nullptr); }
  /** request_stop(), recording `error` unless one is recorded already. */
  void request_stop(std::exception_ptr error) {
    state_->request_stop(std::move(error));
  }
  bool should_stop() const { return state_->should_stop(); }
  /** Blocks until a stop is requested. */
  void wait_for_stop() const {
    std::unique_lock lock(state_->mu);
    state_->changed.wait(lock, [&] { return state_->stop; });
  }
  /** Blocks at most `timeout`; true if a stop was requested. */
  template <class Rep, class Period>
  bool wait_for_stop(std::chrono::duration<Rep, Period> timeout) const {
    std::unique_lock lock(state_->mu);
    return state_->changed.wait_for(lock, timeout,
                                    [&] { return state_->stop; });
  }
  /** Forgets the stop request and the recorded error (to start anew). */
  void clear_stop() {
    std::lock_guard lock(state_->mu);
    state_->stop = false;
    state_->error = nullptr;
  }
  /** Rethrows the recorded error, if any. */
  void raise_requested_exception() const {
    std::exception_ptr e;
    {
      std::lock_guard lock(state_->mu);
      e = state_->error;
    }
    if (e) std::rethrow_exception(e);
  }

  /**
   * Runs body(); an exception it throws becomes request_stop(exception)
   * instead of propagating (TensorFlow's `with coord.stop_on_exception()`).
   */
  template <class F>
  void stop_on_exception(F&& body) {
    try {
      std::forward<F>(body)();
    } catch (...) {
      request_stop(std::current_exception());
    }
  }

  /**
   * A thread running `body` under stop_on_exception, started now or by
   * CoordinatedThread::start() when `start` is false.
   */
  CoordinatedThread make_thread(std::function<void()> body, bool start = true) {
    CoordinatedThread t(state_, std::move(body));
    if (start) t.start();
    return t;
  }

  /**
   * Calls `callback` when a stop is requested (at once if it was), from the
   * requesting thread; remove_stop_callback(id) withdraws it. What unblocks
   * threads goes here, e.g. closing the queue they wait on.
   */
  uint64_t add_stop_callback(std::function<void()> callback) {
    {
      std::lock_guard lock(state_->mu);
      if (!state_->stop) {
        const uint64_t id = state_->next_callback++;
        state_->on_stop.emplace(id, std::move(callback));
        return id;
      }
    }
    callback();
    return 0;
  }
  void remove_stop_callback(uint64_t id) { state_->remove_stop_callback(id); }

  /**
   * Waits until every started thread of `threads` has ended or a stop is
   * requested, then at most `stop_grace_period` more for them to end, and
   * joins them. Threads still running then are detached and make a
   * ThreadsStillRunningError (what they use must outlive them); otherwise
   * the first recorded error is rethrown, as the thread threw it. A thread
   * of another Coordinator is a ValueError: this one's stop would not reach
   * it, nor its end wake this join.
   */
  template <class Rep = int64_t, class Period = std::ratio<1>>
  void join(std::vector<CoordinatedThread>& threads,
            std::chrono::duration<Rep, Period> stop_grace_period =
                std::chrono::seconds(120)) {
    for (size_t i = 0; i < threads.size(); ++i)
      if (threads[i].state_ && threads[i].state_ != state_)
        throw ValueError(
            "[Coordinator::join] expected threads made by this coordinator, "
            "got thread " +
            std::to_string(i) + " of another");
    auto all_ended = [&] {
      for (const CoordinatedThread& t : threads)
        if (t.thread_.joinable() && !*t.done_) return false;
      return true;
    };
    size_t running = 0;
    {
      std::unique_lock lock(state_->mu);
      state_->changed.wait(lock, [&] { return state_->stop || all_ended(); });
      state_->changed.wait_for(lock, stop_grace_period, all_ended);
      for (CoordinatedThread& t : threads)
        if (t.thread_.joinable() && !*t.done_) {
          t.thread_.detach();
          ++running;
        }
    }
    for (CoordinatedThread& t : threads)
      if (t.thread_.joinable()) t.thread_.join();
    if (running > 0)
      throw ThreadsStillRunningError(
          "[Coordinator::join] expected every thread to end within the "
          "grace period after the stop request, got " +
          std::to_string(running) + " of " + std::to_string(threads.size()) +
          " still running (detached)");
    raise_requested_exception();
  }

 private:
  template <class Queue>
  friend class QueueRunner;
  std::shared_ptr<detail::CoordinatorState> state_;
};

}  // namespace tapeflow::train
