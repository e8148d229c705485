#pragma once
// Blocking queues with TensorFlow's close() semantics, safe for any number of
// producers and consumers. Header-only: they depend on nothing but the error
// types, so a ThreadSanitizer test can instantiate them without an
// instrumented libtapeflow.
#include <algorithm>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tapeflow/core/error.hpp"
#include "tapeflow/data/shuffle_rng.hpp"

namespace tapeflow::data {

namespace detail {

/**
 * The shared machinery of FIFOQueue and RandomShuffleQueue: one mutex, one
 * condition variable for "space freed" and one for "elements added". A
 * dequeue is ready when more than `min_after_dequeue` elements are held (or,
 * once closed, when any are); `random` picks the element uniformly instead of
 * taking the oldest.
 */
template <class T>
class BlockingQueue {
 public:
  BlockingQueue(const char* op, int64_t capacity, int64_t min_after_dequeue,
                std::optional<uint64_t> seed)
      : op_(op),
        capacity_(static_cast<size_t>(capacity)),
        min_after_(static_cast<size_t>(min_after_dequeue)),
        random_(seed.has_value()),
        rng_(seed.value_or(0)) {
    if (capacity < 1)
      throw ValueError(std::string("[") + op +
                       "] expected capacity >= 1, got " +
                       std::to_string(capacity));
    if (min_after_dequeue < 0 || min_after_dequeue >= capacity)
      throw ValueError(std::string("[") + op +
                       "] expected 0 <= min_after_dequeue < capacity " +
                       std::to_string(capacity) + ", got " +
                       std::to_string(min_after_dequeue));
  }
  BlockingQueue(const BlockingQueue&) = delete;
  BlockingQueue& operator=(const BlockingQueue&) = delete;

  /**
   * Blocks while the queue is full. Throws CancelledError when the queue is
   * closed before the call, or closed with cancel_pending_enqueues while it
   * waits.
   */
  void enqueue(T value) {
    std::unique_lock lock(mu_);
    if (closed_) throw_closed();
    // Counted while it waits: a closed queue is drained only once no
    // pending enqueue can still add an element (TF's close()).
    ++pending_;
    not_full_.wait(lock,
                   [&] { return items_.size() < capacity_ || cancelled_; });
    --pending_;
    if (!cancelled_) items_.push_back(std::move(value));
    if (closed_)
      not_empty_.notify_all();  // the last pending one may end the data
    else
      not_empty_.notify_one();
    if (cancelled_) throw_closed();
  }

  /**
   * Blocks until an element can be taken. After close() the remaining
   * elements still come out; then it throws OutOfRangeError.
   */
  T dequeue() {
    std::optional<T> v = dequeue_or_end();
    if (!v)
      throw OutOfRangeError(std::string("[") + op_ +
                            "] expected an element, got a closed and empty "
                            "queue");
    return std::move(*v);
  }

  /** dequeue(), but std::nullopt in place of the OutOfRangeError. */
  std::optional<T> dequeue_or_end() {
    return dequeue_or_end([](std::unique_lock<std::mutex>& lock,
                             std::condition_variable& cv,
                             const auto& done) { cv.wait(lock, done); });
  }
  /**
   * dequeue_or_end() waiting through wait(lock, cv, done) in place of
   * cv.wait(lock, done) (prefetch's consumer helps the inter-op pool).
   */
  template <class Wait>
  std::optional<T> dequeue_or_end(Wait&& wait) {
    std::unique_lock lock(mu_);
    const auto done = [&] { return ready(1) || drained(1); };
    wait(lock, not_empty_, done);
    if (!ready(1)) return std::nullopt;
    T v = take_one();
    not_full_.notify_one();
    return v;
  }

  /**
   * Takes exactly n elements at once (n <= capacity - min_after_dequeue),
   * blocking until they are there. Once closed with fewer than n left it
   * throws OutOfRangeError and takes nothing (use dequeue_up_to for the
   * rest).
   */
  std::vector<T> dequeue_many(int64_t n) {
    check_count(n, "dequeue_many");
    std::unique_lock lock(mu_);
    const size_t k = static_cast<size_t>(n);
    not_empty_.wait(lock, [&] { return ready(k) || finished(); });
    if (!ready(k))
      throw OutOfRangeError(std::string("[") + op_ + "] expected " +
                            std::to_string(n) +
                            " elements, got a closed queue holding " +
                            std::to_string(items_.size()));
    return take(k);
  }

  /**
   * Like dequeue_many, but once closed it returns what is left (1..n
   * elements); a closed and empty queue throws OutOfRangeError.
   */
  std::vector<T> dequeue_up_to(int64_t n) {
    check_count(n, "dequeue_up_to");
    std::unique_lock lock(mu_);
    const size_t k = static_cast<size_t>(n);
    not_empty_.wait(lock, [&] { return ready(k) || finished(); });
    if (ready(k)) return take(k);
    if (items_.empty())
      throw OutOfRangeError(std::string("[") + op_ +
                            "] expected an element, got a closed and empty "
                            "queue");
    return take(items_.size());
  }

  /**
   * No more enqueues: later ones throw CancelledError. Pending dequeues
   * drain what is left, then end. With cancel_pending_enqueues, enqueues
   * blocked on a full queue throw too (otherwise they wait for space).
   */
  void close(bool cancel_pending_enqueues = false) {
    {
      std::lock_guard lock(mu_);
      closed_ = true;
      cancelled_ = cancelled_ || cancel_pending_enqueues;
    }
    not_empty_.notify_all();
    not_full_.notify_all();
  }

  bool is_closed() const {
    std::lock_guard lock(mu_);
    return closed_;
  }
  int64_t size() const {
    std::lock_guard lock(mu_);
    return static_cast<int64_t>(items_.size());
  }
  int64_t capacity() const { return static_cast<int64_t>(capacity_); }

 private:
  // Enough elements for k dequeues while keeping min_after_dequeue (which no
  // longer applies once the queue is closed: it drains).
  bool ready(size_t k) const {
    return items_.size() >= k + (closed_ ? 0 : min_after_);
  }
  // Closed, with no enqueue still waiting to add its element.
  bool finished() const { return closed_ && pending_ == 0; }
  bool drained(size_t k) const { return finished() && items_.size() < k; }

  T take_one() {
    if (random_) {
      std::swap(items_[rng_.below(items_.size())], items_.back());
      T v = std::move(items_.back());
      items_.pop_back();
      return v;
    }
    T v = std::move(items_.front());
    items_.pop_front();
    return v;
  }

  std::vector<T> take(size_t k) {
    std::vector<T> out;
    out.reserve(k);
    for (size_t i = 0; i < k; ++i) out.push_back(take_one());
    not_full_.notify_all();
    return out;
  }

  // More than capacity - min_after_dequeue could never be ready.
  void check_count(int64_t n, const char* what) const {
    const size_t most = capacity_ - min_after_;
    if (n < 1 || static_cast<size_t>(n) > most)
      throw ValueError(std::string("[") + op_ + "] expected " + what +
                       " count in 1.." + std::to_string(most) +
                       " (capacity - min_after_dequeue), got " +
                       std::to_string(n));
  }

  [[noreturn]] void throw_closed() const {
    throw CancelledError(std::string("[") + op_ +
                         "] expected an open queue, got a closed one");
  }

  const char* op_;
  const size_t capacity_;
  const size_t min_after_;
  const bool random_;
  ShuffleRng rng_;
  mutable std::mutex mu_;
  std::condition_variable not_full_, not_empty_;
  std::deque<T> items_;
  size_t pending_ = 0;  // enqueues waiting for space
  bool closed_ = false, cancelled_ = false;
};

}  // namespace detail

/**
 * First-in first-out queue of at most `capacity` elements. dequeue() on a
 * closed, empty queue throws OutOfRangeError (TensorFlow's behaviour);
 * dequeue_or_end() returns std::nullopt instead.
 */
template <class T>
class FIFOQueue : public detail::BlockingQueue<T> {
 public:
  explicit FIFOQueue(int64_t capacity)
      : detail::BlockingQueue<T>("FIFOQueue", capacity, 0, std::nullopt) {}
};

/**
 * Dequeues a uniformly random element, and only while more than
 * `min_after_dequeue` remain (so that the mix stays wide) until close(),
 * after which it drains. The same `seed` and the same sequence of operations
 * give the same order.
 */
template <class T>
class RandomShuffleQueue : public detail::BlockingQueue<T> {
 public:
  RandomShuffleQueue(int64_t capacity, int64_t min_after_dequeue, uint64_t seed)
      : detail::BlockingQueue<T>("RandomShuffleQueue", capacity,
                                 min_after_dequeue, seed) {}
};

}  // namespace tapeflow::data
