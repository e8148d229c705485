#pragma once
// The iteration side of tpf::data: one IteratorImpl per pipeline stage (type
// erasure), and the user-facing Iterator with range-for support.
#include <concepts>
#include <cstddef>
#include <exception>
#include <functional>
#include <iterator>
#include <memory>
#include <mutex>
#include <optional>
#include <tuple>
#include <type_traits>
#include <utility>

namespace tapeflow::data {

/** One stage of a running pipeline; each owns its upstream stages. */
template <class T>
class IteratorImpl {
 public:
  virtual ~IteratorImpl() = default;
  /** The next element, or std::nullopt at the end of the data. */
  virtual std::optional<T> next() = 0;
};

template <class T>
using IteratorFactory = std::function<std::unique_ptr<IteratorImpl<T>>()>;

/**
 * One pass (epoch) over a Dataset. get_next() returns std::nullopt at the end
 * of the data and on every later call. An exception thrown while producing an
 * element (in this thread or a background one) comes out of get_next(); the
 * iterator can be asked again after it. Destroying it mid-epoch stops and
 * joins the background threads of its stages. Threads may share one
 * iterator: get_next() calls take turns (TF's iterator lock), so each
 * element goes to one of them; a map function of its own pipeline must not
 * call it (the lock is held).
 */
template <class T>
class Iterator {
 public:
  explicit Iterator(std::unique_ptr<IteratorImpl<T>> impl)
      : state_(std::make_unique<State>(std::move(impl))) {}

  std::optional<T> get_next() {
    if (!state_) return std::nullopt;  // moved from
    std::lock_guard lock(state_->mu);
    if (!state_->impl) return std::nullopt;
    std::optional<T> v = state_->impl->next();
    // Ending frees the stages (and their threads) at once.
    if (!v) state_->impl.reset();
    return v;
  }

  /** The input iterator of range-for; move-only, it owns the epoch. */
  class RangeIterator {
   public:
    using value_type = T;
    using difference_type = std::ptrdiff_t;

    explicit RangeIterator(Iterator it) : it_(std::move(it)) { ++*this; }
    T& operator*() { return *current_; }
    T* operator->() { return &*current_; }
    RangeIterator& operator++() {
      current_ = it_.get_next();
      return *this;
    }
    void operator++(int) { ++*this; }
    bool operator==(std::default_sentinel_t) const {
      return !current_.has_value();
    }

   private:
    Iterator it_;
    std::optional<T> current_;
  };

 private:
  struct State {
    explicit State(std::unique_ptr<IteratorImpl<T>> i) : impl(std::move(i)) {}
    std::mutex mu;
    std::unique_ptr<IteratorImpl<T>> impl;
  };
  std::unique_ptr<State> state_;
};

namespace detail {

/** A stage whose next() is a (mutable) callable: most transformations. */
template <class T, class F>
class FnIterator final : public IteratorImpl<T> {
 public:
  explicit FnIterator(F f) : f_(std::move(f)) {}
  std::optional<T> next() override { return f_(); }

 private:
  F f_;
};

template <class T, class F>
std::unique_ptr<IteratorImpl<T>> make_fn_iterator(F f) {
  return std::make_unique<FnIterator<T, F>>(std::move(f));
}

/** An element, or the exception thrown instead of one; neither: the end. */
template <class T>
struct Outcome {
  std::optional<T> value;
  std::exception_ptr error;
  bool is_end() const { return !value && !error; }
};

/** in.next(), with an exception kept in the outcome (for another thread). */
template <class T>
Outcome<T> next_outcome(IteratorImpl<T>& in) {
  Outcome<T> r;
  try {
    r.value = in.next();
  } catch (...) {
    r.error = std::current_exception();
  }
  return r;
}

template <class T>
struct is_tuple : std::false_type {};
template <class... Ts>
struct is_tuple<std::tuple<Ts...>> : std::true_type {};

/**
 * Calls f with the element, or with its components when the element is a
 * tuple that f does not take whole: map([](Tensor x, Tensor y) {...}).
 */
template <class F, class T>
decltype(auto) invoke_element(F& f, T&& x) {
  if constexpr (std::is_invocable_v<F&, T&&>)
    return std::invoke(f, std::forward<T>(x));
  else
    return std::apply(f, std::forward<T>(x));
}

template <class F, class T>
using element_result_t = std::decay_t<decltype(invoke_element(
    std::declval<F&>(), std::declval<T>()))>;

}  // namespace detail

}  // namespace tapeflow::data
