#pragma once
// Dataset::interleave, in tf.data's InterleaveDataset order, on the
// consumer's thread or with worker threads reading the inner datasets ahead
// (ParallelInterleaveDataset with deterministic=True: the same order).
// Included by dataset.hpp; include that.
#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "tapeflow/data/dataset_core.hpp"
#include "tapeflow/data/inter_op_pool.hpp"
#include "tapeflow/data/workers.hpp"

namespace tapeflow::data {

namespace detail {

/**
 * The cycle: a slot gives block_length elements, then the cycle moves on; an
 * empty slot takes the dataset of the next input element and is read at
 * once; an exhausted one moves the cycle on. An exception (from upstream, f
 * or an inner dataset) comes out at the place of the call that threw it, and
 * the cycle stays where it was, as in a plain loop of next() calls.
 *
 * Without workers the consumer makes every call itself. With them, only the
 * workers do: they read each open inner dataset up to block_length elements
 * ahead (the consumer's slot first) and open up to cycle_length datasets of
 * later input elements, and the consumer waits. Each call of an inner
 * iterator, or of upstream with f, runs outside the lock under a `busy`
 * mark, so one thread at a time uses an iterator; results are queued per
 * inner dataset, so the order is the consumer's walk of the cycle whoever
 * produced them.
 */
template <class T, class U, class F>
class InterleaveIterator final : public IteratorImpl<U> {
 public:
  InterleaveIterator(std::unique_ptr<IteratorImpl<T>> in, F f,
                     int64_t cycle_length, int64_t block_length,
                     int64_t workers)
      : in_(std::move(in)),
        f_(std::move(f)),
        cycle_length_(static_cast<size_t>(cycle_length)),
        block_length_(block_length) {
    workers_.start("interleave", workers, [this] { work(); });
  }

  ~InterleaveIterator() override { workers_.stop_and_join(); }

  std::optional<U> next() override {
    std::unique_lock lock(mu_);
    while (!(input_ended_ && opened_.empty()) || open_ > 0) {
      if (index_ == cycle_.size()) cycle_.emplace_back();
      std::shared_ptr<Inner>& slot = cycle_[index_];
      if (slot && !slot->results.empty()) {
        Outcome<U> r = std::move(slot->results.front());
        slot->results.pop_front();
        more_work_.notify_all();
        if (r.error) std::rethrow_exception(r.error);
        if (++in_block_ == block_length_) advance();
        return std::move(r.value);
      }
      if (slot && slot->ended) {
        slot.reset();
        --open_;
        advance();
      } else if (slot) {
        if (slot->busy || !workers_.empty())
          detail::wait_once_helping_pool(lock, ready_);
        else
          produce(lock, slot);
      } else if (!opened_.empty()) {
        Opened o = std::move(opened_.front());
        opened_.pop_front();
        more_work_.notify_all();
        if (o.error) std::rethrow_exception(o.error);
        slot = std::move(o.inner);
        ++open_;
      } else if (!input_ended_) {
        if (input_busy_ || !workers_.empty())
          detail::wait_once_helping_pool(lock, ready_);
        else
          open_next(lock);
      } else {
        advance();
      }
    }
    return std::nullopt;
  }

 private:
  struct Inner {
    explicit Inner(std::unique_ptr<IteratorImpl<U>> i) : it(std::move(i)) {}
    std::unique_ptr<IteratorImpl<U>> it;
    std::deque<Outcome<U>> results;  // elements and errors, never the end
    bool busy = false, ended = false;
  };
  // An input element's dataset, opened ahead, or what was thrown instead.
  struct Opened {
    std::shared_ptr<Inner> inner;
    std::exception_ptr error;
  };

  /**
   * The cycle holds only the slots the walk has reached: cycle_length bounds
   * it, and once the input has ended the slots never reached stay empty and
   * are skipped, so a cycle_length far beyond the input costs nothing.
   */
  void advance() {
    in_block_ = 0;
    ++index_;
    if (index_ == cycle_length_ ||
        (input_ended_ && opened_.empty() && index_ >= cycle_.size()))
      index_ = 0;
  }

  /** One next() of `inner`, outside the lock. */
  void produce(std::unique_lock<std::mutex>& lock,
               std::shared_ptr<Inner> inner) {
    inner->busy = true;
    lock.unlock();
    Outcome<U> r = next_outcome(*inner->it);
    lock.lock();
    inner->busy = false;
    if (r.is_end())
      inner->ended = true;
    else
      inner->results.push_back(std::move(r));
    ready_.notify_all();
  }

  /** Pulls the next input element and opens its dataset, outside the lock. */
  void open_next(std::unique_lock<std::mutex>& lock) {
    input_busy_ = true;
    lock.unlock();
    Opened o;
    bool end = false;
    try {
      std::optional<T> x = in_->next();
      if (x)
        o.inner = std::make_shared<Inner>(
            invoke_element(f_, std::move(*x)).make_impl());
      else
        end = true;
    } catch (...) {
      o.error = std::current_exception();
    }
    lock.lock();
    input_busy_ = false;
    if (end)
      input_ended_ = true;
    else
      opened_.push_back(std::move(o));
    ready_.notify_all();
  }

  /**
   * The open inner dataset a worker should read ahead: the cycle's from the
   * consumer's slot on, then the ones opened ahead; null if none has room.
   */
  std::shared_ptr<Inner> pick() const {
    auto wants = [this](const std::shared_ptr<Inner>& s) {
      return s && !s->busy && !s->ended &&
             static_cast<int64_t>(s->results.size()) < block_length_;
    };
    const size_t n = cycle_.size();
    for (size_t k = 0; k < n; ++k)
      if (const auto& s = cycle_[(index_ + k) % n]; wants(s)) return s;
    for (const Opened& o : opened_)
      if (wants(o.inner)) return o.inner;
    return nullptr;
  }

  void work() {
    std::unique_lock lock(mu_);
    while (!stop_) {
      if (std::shared_ptr<Inner> inner = pick())
        produce(lock, std::move(inner));
      else if (!input_busy_ && !input_ended_ && opened_.size() < cycle_length_)
        open_next(lock);
      else
        more_work_.wait(lock);
    }
  }

  std::unique_ptr<IteratorImpl<T>> in_;
  F f_;
  std::mutex mu_;
  std::condition_variable ready_, more_work_;
  std::vector<std::shared_ptr<Inner>> cycle_;
  const size_t cycle_length_;
  std::deque<Opened> opened_;
  const int64_t block_length_;
  // The consumer's walk (only the consumer changes these).
  size_t index_ = 0;
  int64_t in_block_ = 0, open_ = 0;
  bool input_busy_ = false, input_ended_ = false, stop_ = false;
  Workers workers_{mu_, stop_, more_work_};  // last: joined before the rest
};

}  // namespace detail

template <class T>
template <class F>
auto Dataset<T>::interleave(F f, int64_t cycle_length, int64_t block_length,
                            int64_t num_parallel_calls) const {
  using InnerDataset = detail::element_result_t<F, T>;
  using U = typename InnerDataset::element_type;
  static_assert(std::is_same_v<InnerDataset, Dataset<U>>,
                "interleave's function must return a Dataset");
  // tf.data: an AUTOTUNE cycle is as long as there are cores to read with.
  if (cycle_length == kAutotune)
    cycle_length = std::max<int64_t>(detail::inter_op_threads_wanted(), 1);
  if (cycle_length < 1 || block_length < 1)
    throw ValueError(
        "[interleave] expected cycle_length >= 1 (or kAutotune) and "
        "block_length >= 1, got " +
        std::to_string(cycle_length) + " and " + std::to_string(block_length));
  if (num_parallel_calls == kAutotune)
    num_parallel_calls = std::clamp<int64_t>(
        detail::inter_op_threads_wanted(), 1, cycle_length);
  if (num_parallel_calls < 1 || num_parallel_calls > cycle_length)
    throw ValueError("[interleave] expected num_parallel_calls in 1.." +
                     std::to_string(cycle_length) +
                     " (cycle_length) or kAutotune, got " +
                     std::to_string(num_parallel_calls));
  // One call at a time runs on the consumer's thread, with no workers.
  const int64_t workers = num_parallel_calls > 1 ? num_parallel_calls : 0;
  Dataset up = *this;
  return Dataset<U>([up, f, cycle_length, block_length,
                     workers]() -> std::unique_ptr<IteratorImpl<U>> {
    return std::make_unique<detail::InterleaveIterator<T, U, F>>(
        up.make_impl(), f, cycle_length, block_length, workers);
  });
}

}  // namespace tapeflow::data
