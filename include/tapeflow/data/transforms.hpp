#pragma once
// The stateful and threaded transformations of Dataset<T>: map (sequential
// or on worker threads), shuffle, cache, prefetch. Included by dataset.hpp;
// include that.
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "tapeflow/data/dataset_core.hpp"
#include "tapeflow/data/inter_op_pool.hpp"
#include "tapeflow/data/queue.hpp"
#include "tapeflow/data/shuffle_rng.hpp"
#include "tapeflow/data/workers.hpp"

namespace tapeflow::data {

namespace detail {

/**
 * map with num_parallel_calls calls in flight. A runner thread pulls from
 * upstream (an upstream stage is not thread-safe) and gives each element the
 * next slot of an ordered window and a call of f on the shared inter-op pool,
 * so results come out in input order however the calls finish. An exception
 * (from upstream or f) is stored in its slot and rethrown by next() at that
 * position; the runner goes on.
 */
template <class In, class Out, class F>
class ParallelMapIterator final : public IteratorImpl<Out> {
 public:
  ParallelMapIterator(std::unique_ptr<IteratorImpl<In>> in, F f, int64_t calls)
      : in_(std::move(in)),
        f_(std::move(f)),
        // Only the pool's threads run calls: a larger window only holds
        // results ahead, and 2^40 slots read upstream without end.
        window_limit_(static_cast<size_t>(std::min(calls, kMostStageThreads))),
        pool_(InterOpPool::instance()) {
    runner_.start("map", 1, [this] { run(); });
  }

  ~ParallelMapIterator() override {
    runner_.stop_and_join();
    // The calls in flight use f_ and their slots: wait for them.
    std::unique_lock lock(mu_);
    wait_helping_pool(lock, done_, [&] { return in_flight_ == 0; });
  }

  std::optional<Out> next() override {
    std::unique_lock lock(mu_);
    wait_helping_pool(lock, done_, [&] {
      return window_.empty() ? input_ended_ : window_.front()->done;
    });
    if (window_.empty()) return std::nullopt;
    std::shared_ptr<Slot> slot = std::move(window_.front());
    window_.pop_front();
    lock.unlock();
    space_.notify_one();
    // Taken out of the slot: the worker's call may drop the slot's last
    // reference after this, and the error must then be this thread's alone
    // (its count lives in libstdc++, where ThreadSanitizer cannot see it).
    if (slot->error) std::rethrow_exception(std::exchange(slot->error, {}));
    return std::move(slot->value);
  }

 private:
  struct Slot {
    std::optional<Out> value;
    std::exception_ptr error;
    bool done = false;
  };

  void run() {
    for (;;) {
      std::shared_ptr<Slot> slot;
      {
        std::unique_lock lock(mu_);
        space_.wait(lock,
                    [&] { return stop_ || window_.size() < window_limit_; });
        if (stop_) return;
        slot = std::make_shared<Slot>();
        window_.push_back(slot);
      }
      auto x = std::make_shared<std::optional<In>>();
      try {
        *x = in_->next();
      } catch (...) {
        finish(*slot, std::current_exception());
        continue;
      }
      if (!*x) {
        // The end: the newest slot is this one, drop it.
        {
          std::lock_guard lock(mu_);
          window_.pop_back();
          input_ended_ = true;
        }
        done_.notify_all();
        return;
      }
      {
        std::lock_guard lock(mu_);
        ++in_flight_;
      }
      pool_.submit([this, slot, x] {
        bool stopping;
        {
          std::lock_guard lock(mu_);
          stopping = stop_;
        }
        // A call still queued when the iterator goes is skipped (TF cancels
        // it): destruction waits for the calls running, not for the queue.
        std::exception_ptr error;
        if (!stopping) try {
            slot->value.emplace(invoke_element(f_, std::move(**x)));
          } catch (...) {
            error = std::current_exception();
          }
        // Notified under the lock: once it is released, the destructor may
        // find in_flight_ == 0 and destroy done_.
        std::lock_guard lock(mu_);
        slot->error = std::move(error);
        slot->done = true;
        --in_flight_;
        done_.notify_all();
      });
    }
  }

  void finish(Slot& slot, std::exception_ptr error) {
    {
      std::lock_guard lock(mu_);
      slot.error = std::move(error);
      slot.done = true;
    }
    done_.notify_all();
  }

  std::unique_ptr<IteratorImpl<In>> in_;
  F f_;
  const size_t window_limit_;
  InterOpPool& pool_;
  std::mutex mu_;
  std::condition_variable space_, done_;
  std::deque<std::shared_ptr<Slot>> window_;
  int64_t in_flight_ = 0;  // calls submitted and not finished
  bool input_ended_ = false, stop_ = false;
  Workers runner_{mu_, stop_, space_};  // last: joined before the rest goes
};

/**
 * prefetch: a producer thread moves elements (or the exception that came
 * instead of one) from upstream into a FIFOQueue. Destruction closes the
 * queue with cancel_pending_enqueues, so a producer blocked on a full queue
 * wakes with CancelledError and exits, and is joined.
 */
template <class T>
class PrefetchIterator final : public IteratorImpl<T> {
 public:
  PrefetchIterator(std::unique_ptr<IteratorImpl<T>> in, int64_t buffer_size,
                   const char* op)
      : in_(std::move(in)), queue_(buffer_size) {
    producer_.start(op, 1, [this] { run(); });
  }

  ~PrefetchIterator() override {
    queue_.close(/*cancel_pending_enqueues=*/true);
    producer_.stop_and_join();
  }

  std::optional<T> next() override {
    if (ended_) return std::nullopt;
    // On a pool thread (a map function reading a prefetched pipeline), it
    // runs pool tasks while it waits: its producer may wait on them.
    std::optional<Outcome<T>> item = queue_.dequeue_or_end(
        [](std::unique_lock<std::mutex>& lock, std::condition_variable& cv,
           const auto& done) { detail::wait_helping_pool(lock, cv, done); });
    if (item && item->error) std::rethrow_exception(item->error);
    if (!item || !item->value) {
      ended_ = true;
      return std::nullopt;
    }
    return std::move(item->value);
  }

 private:
  void run() {
    try {
      for (;;) {
        Outcome<T> item = next_outcome(*in_);
        const bool end = item.is_end();
        queue_.enqueue(std::move(item));
        if (end) return;
      }
    } catch (const CancelledError&) {
      // The consumer went away.
    } catch (...) {
      // enqueue itself failed (out of memory): end the data with the error.
      queue_.close();
    }
  }

  std::unique_ptr<IteratorImpl<T>> in_;
  FIFOQueue<Outcome<T>> queue_;
  bool ended_ = false;
  // The producer ends by the queue's cancellation, not by the stop flag.
  std::mutex mu_;
  std::condition_variable wake_;
  bool stop_ = false;
  Workers producer_{mu_, stop_, wake_};  // last: joined before the rest
};

/** prefetch's buffer_size with kAutotune resolved; below 1 is refused. */
inline int64_t prefetch_buffer(const char* op, int64_t buffer_size) {
  if (buffer_size == kAutotune)
    return std::max<int64_t>(2, inter_op_threads_wanted());
  if (buffer_size < 1)
    throw ValueError(std::string("[") + op +
                     "] expected buffer_size >= 1 or kAutotune, got " +
                     std::to_string(buffer_size));
  return buffer_size;
}

template <class T>
struct CacheState {
  std::mutex mu;
  bool complete = false;
  std::vector<T> values;
};

}  // namespace detail

template <class T>
template <class F>
Dataset<detail::element_result_t<F, T>> Dataset<T>::map(
    F f, int64_t num_parallel_calls) const {
  using U = detail::element_result_t<F, T>;
  static_assert(!std::is_void_v<U>, "map's function must return a value");
  if (num_parallel_calls == kAutotune)
    num_parallel_calls = detail::inter_op_threads_wanted();
  if (num_parallel_calls < 1)
    throw ValueError(
        "[map] expected num_parallel_calls >= 1 or kAutotune, got " +
        std::to_string(num_parallel_calls));
  Dataset up = *this;
  return Dataset<U>(
      [up, f, num_parallel_calls]() -> std::unique_ptr<IteratorImpl<U>> {
        if (num_parallel_calls > 1)
          return std::make_unique<detail::ParallelMapIterator<T, U, F>>(
              up.make_impl(), f, num_parallel_calls);
        return detail::make_fn_iterator<U>(
            [in = up.make_impl(), f]() mutable -> std::optional<U> {
              std::optional<T> x = in->next();
              if (!x) return std::nullopt;
              return detail::invoke_element(f, std::move(*x));
            });
      },
      cardinality_);
}

template <class T>
Dataset<T> Dataset<T>::shuffle(int64_t buffer_size,
                               std::optional<uint64_t> seed,
                               bool reshuffle_each_iteration) const {
  if (buffer_size < 1)
    throw ValueError("[shuffle] expected buffer_size >= 1, got " +
                     std::to_string(buffer_size));
  const uint64_t base = seed ? *seed : detail::unseeded();
  // Shared by the copies of this dataset: each epoch gets the next number.
  auto epochs = std::make_shared<std::atomic<uint64_t>>(0);
  Dataset up = *this;
  return Dataset(
      [up, buffer_size, base, reshuffle_each_iteration, epochs] {
        const uint64_t epoch = epochs->fetch_add(1);
        const uint64_t s = detail::mix_seed(
            base ^ (reshuffle_each_iteration ? detail::mix_seed(epoch) : 0));
        return detail::make_fn_iterator<T>(
            [in = up.make_impl(), size = static_cast<size_t>(buffer_size),
             rng = detail::ShuffleRng(s), buffer = std::vector<T>(),
             ended = false]() mutable -> std::optional<T> {
              while (!ended && buffer.size() < size) {
                std::optional<T> x = in->next();
                if (!x)
                  ended = true;
                else
                  buffer.push_back(std::move(*x));
              }
              if (buffer.empty()) return std::nullopt;
              std::swap(buffer[rng.below(buffer.size())], buffer.back());
              T v = std::move(buffer.back());
              buffer.pop_back();
              return v;
            });
      },
      cardinality_);
}

template <class T>
Dataset<T> Dataset<T>::cache() const {
  auto state = std::make_shared<detail::CacheState<T>>();
  Dataset up = *this;
  return Dataset(
      [up, state]() -> std::unique_ptr<IteratorImpl<T>> {
        {
          std::lock_guard lock(state->mu);
          if (state->complete)
            // Complete values are never written again: read without the lock.
            return detail::make_fn_iterator<T>(
                [state, i = size_t{0}]() mutable -> std::optional<T> {
                  if (i == state->values.size()) return std::nullopt;
                  return state->values[i++];
                });
        }
        return detail::make_fn_iterator<T>(
            [state, in = up.make_impl(),
             seen = std::vector<T>()]() mutable -> std::optional<T> {
              if (!in) return std::nullopt;
              std::optional<T> x = in->next();
              if (x) {
                seen.push_back(*x);
                return x;
              }
              in.reset();
              std::lock_guard lock(state->mu);
              if (!state->complete) {
                state->values = std::move(seen);
                state->complete = true;
              }
              return std::nullopt;
            });
      },
      cardinality_);
}

template <class T>
Dataset<T> Dataset<T>::prefetch(int64_t buffer_size) const {
  buffer_size = detail::prefetch_buffer("prefetch", buffer_size);
  Dataset up = *this;
  return Dataset(
      [up, buffer_size]() -> std::unique_ptr<IteratorImpl<T>> {
        return std::make_unique<detail::PrefetchIterator<T>>(
            up.make_impl(), buffer_size, "prefetch");
      },
      cardinality_);
}

}  // namespace tapeflow::data
