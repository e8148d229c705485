#pragma once
// The class tpf::data::Dataset<T> with every member declared, and its
// sources. The other members are defined by stage_transforms.hpp,
// batch_transforms.hpp, transforms.hpp and interleave.hpp, which include
// this header; include dataset.hpp, which includes them all, to use a
// Dataset.
#include <cstdint>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "tapeflow/core/error.hpp"
#include "tapeflow/core/tensor.hpp"
#include "tapeflow/data/batch_traits.hpp"
#include "tapeflow/data/cardinality.hpp"
#include "tapeflow/data/iterator.hpp"

namespace tapeflow::data {

template <class T>
class Dataset;

/**
 * num_parallel_calls = kAutotune: as many as the inter-op pool has threads
 * (config::inter_op_threads(), by default one per core).
 */
inline constexpr int64_t kAutotune = -1;

/**
 * A cheap, copyable handle to an immutable description of a pipeline whose
 * elements have type T (a Tensor, a std::string, a tuple of them, ...).
 * Nothing runs until it is iterated; every iteration (range-for or
 * make_iterator()) is a fresh epoch with its own state, so shuffle() can
 * reshuffle and cache() can replay. Transformations return new datasets and
 * leave this one unchanged.
 */
template <class T>
class Dataset {
 public:
  using element_type = T;

  /**
   * A pipeline whose epochs come from `factory`; `cardinality` is what
   * cardinality() reports.
   */
  explicit Dataset(IteratorFactory<T> factory,
                   int64_t cardinality = kUnknownCardinality)
      : factory_(
            std::make_shared<const IteratorFactory<T>>(std::move(factory))),
        cardinality_(cardinality) {}

  /** Starts an epoch. */
  Iterator<T> make_iterator() const { return Iterator<T>(make_impl()); }
  /** Starts an epoch as a bare stage (for building transformations). */
  std::unique_ptr<IteratorImpl<T>> make_impl() const {
    if (!factory_)
      throw ValueError(
          "[Dataset] expected a dataset, got a moved-from one (no pipeline)");
    return (*factory_)();
  }

  /** Range-for: each loop is a new epoch. */
  typename Iterator<T>::RangeIterator begin() const {
    return typename Iterator<T>::RangeIterator(make_iterator());
  }
  std::default_sentinel_t end() const { return {}; }

  /**
   * The number of elements of an epoch when the pipeline's description
   * tells it, else kInfiniteCardinality (repeat() forever) or
   * kUnknownCardinality (after filter, from_generator, file readers,
   * interleave, ignore_errors): tf.data's rules.
   */
  int64_t cardinality() const { return cardinality_; }

  // ---- sources ----
  /** One element: `value` (a copy of it every epoch). */
  static Dataset from_tensors(T value);
  /**
   * The rows of a tensor (T = Tensor), or of several tensors together (T a
   * tuple of Tensors), along axis 0. Rank-0 tensors and tuples whose axis-0
   * sizes differ are ShapeErrors.
   */
  static Dataset from_tensor_slices(const T& components);
  /**
   * Elements from `gen`: either a callable returning std::optional<T>
   * (std::nullopt ends the data; each epoch calls a fresh copy of it) or a
   * factory returning such a callable (called once per epoch).
   */
  template <class G>
  static Dataset from_generator(G gen);

  // ---- transformations ----
  /**
   * f(element) for every element (a tuple element may also be passed as its
   * components). With num_parallel_calls > 1 (or kAutotune) up to that many
   * calls of f run at once on the process's inter-op pool (so f must be safe
   * to call that way); the output keeps the input order, and an exception
   * from f comes out of get_next() at that element's place. At most 256
   * elements are read ahead, whatever the bound (only the pool's threads
   * run calls); calls not started when the iterator goes are skipped.
   */
  template <class F>
  Dataset<detail::element_result_t<F, T>> map(
      F f, int64_t num_parallel_calls = 1) const;
  /** The elements for which pred(element) is true. */
  template <class P>
  Dataset filter(P pred) const;
  /**
   * Groups consecutive elements into batches of batch_size (the last one
   * smaller unless drop_remainder), combined by BatchTraits<T>.
   */
  Dataset<batch_t<T>> batch(int64_t batch_size,
                            bool drop_remainder = false) const;
  /**
   * batch() for Tensors (or tuples of them) of different shapes: each
   * component is padded at the end of each axis to its entry of
   * padded_shapes (empty: the longest in the batch; -1 in a shape: the
   * longest on that axis) with its padding value (one for all components,
   * or one per component).
   */
  Dataset padded_batch(int64_t batch_size,
                       std::vector<std::vector<int64_t>> padded_shapes = {},
                       PaddingValues padding_values = 0.0,
                       bool drop_remainder = false) const;
  /**
   * Shuffles through a buffer of buffer_size elements (buffer_size at least
   * the dataset size gives a uniform permutation). The same seed gives the
   * same orders; with reshuffle_each_iteration each epoch has another one.
   * Without a seed, one is drawn from the clock.
   */
  Dataset shuffle(int64_t buffer_size, std::optional<uint64_t> seed = {},
                  bool reshuffle_each_iteration = true) const;
  /** count epochs of this dataset in a row (-1: forever). */
  Dataset repeat(int64_t count = -1) const;
  /** The first n elements (-1: all). */
  Dataset take(int64_t n) const;
  /** All but the first n elements (-1: none). */
  Dataset skip(int64_t n) const;
  /**
   * Every num_shards-th element from element `index` on (tf.data's shard):
   * worker i of n reads its own part. ValueError unless 0 <= index < n.
   */
  Dataset shard(int64_t num_shards, int64_t index) const;
  /** (index, element) pairs, the index counting from start. */
  Dataset<std::tuple<int64_t, T>> enumerate(int64_t start = 0) const;
  /**
   * Keeps the elements of the first complete epoch in memory; later epochs
   * replay them without running the upstream stages. An epoch that stops
   * early caches nothing.
   */
  Dataset cache() const;
  /**
   * f(element) gives a Dataset per input element; their elements are
   * interleaved: cycle_length of them are open at once (kAutotune: as many
   * as the inter-op pool has threads), and block_length
   * consecutive elements come from each in turn (TensorFlow's order). With
   * num_parallel_calls in 2..cycle_length (or kAutotune) that many threads
   * (256 at most) read the open datasets ahead and open the next ones (calling
   * f one at a time); the order stays the same, and an exception comes out of
   * get_next() at its place in it.
   */
  template <class F>
  auto interleave(F f, int64_t cycle_length, int64_t block_length = 1,
                  int64_t num_parallel_calls = 1) const;
  /**
   * Produces up to buffer_size elements ahead on a background thread (through
   * a FIFOQueue), so the upstream work overlaps the consumer's. kAutotune
   * (tf.data.AUTOTUNE) buffers as many elements as the inter-op pool has
   * threads, two at least.
   */
  Dataset prefetch(int64_t buffer_size) const;
  /**
   * prefetch() that also copies each element's tensors (a Tensor, the
   * Tensors of a tuple or vector; other values as they are) to `device` on
   * its background thread, so host-to-device copies overlap the consumer's
   * compute (tf.data.experimental.prefetch_to_device). Put it last: the
   * elements come out on `device`. A failed copy (no such device) comes out
   * of get_next() at that element's place. buffer_size as for prefetch().
   */
  Dataset prefetch_to_device(Device device, int64_t buffer_size = 1) const;
  /**
   * Skips the elements whose production threw DataLossError or IOError (a
   * corrupt record, an unreadable file); every other error still comes out.
   */
  Dataset ignore_errors() const;

 private:
  std::shared_ptr<const IteratorFactory<T>> factory_;
  int64_t cardinality_;
};

/** Elements of all datasets side by side; ends with the shortest. */
template <class... Ts>
Dataset<std::tuple<Ts...>> zip(const Dataset<Ts>&... datasets);

/** int64 scalar tensors start, start + step, ... up to (excluding) stop. */
Dataset<Tensor> range(int64_t start, int64_t stop, int64_t step = 1);
inline Dataset<Tensor> range(int64_t stop) {
  return range(0, stop, 1);
}

/** Dataset<T>::from_tensors with T deduced. */
template <class T>
Dataset<T> from_tensors(T value) {
  return Dataset<T>::from_tensors(std::move(value));
}
/** Dataset<T>::from_tensor_slices with T (Tensor or tuple) deduced. */
template <class T>
Dataset<T> from_tensor_slices(const T& components) {
  return Dataset<T>::from_tensor_slices(components);
}

namespace detail {

/** Row i of t (axis 0 removed): a view. */
Tensor row(const Tensor& t, int64_t i);

template <class G>
auto generator_result() {
  if constexpr (std::is_invocable_v<std::invoke_result_t<G&>&>)
    return std::invoke_result_t<std::invoke_result_t<G&>&>{};
  else
    return std::invoke_result_t<G&>{};
}

template <class T>
struct is_optional : std::false_type {};
template <class T>
struct is_optional<std::optional<T>> : std::true_type {};

}  // namespace detail

/** from_generator with the element type deduced from the callable. */
template <class G>
auto from_generator(G gen) {
  using Opt = decltype(detail::generator_result<G>());
  static_assert(detail::is_optional<Opt>::value,
                "from_generator expects a callable returning std::optional<T> "
                "(or a factory of such callables)");
  return Dataset<typename Opt::value_type>::from_generator(std::move(gen));
}

// ---------------------------------------------------------------------------

template <class T>
Dataset<T> Dataset<T>::from_tensors(T value) {
  return Dataset(
      [value] {
        return detail::make_fn_iterator<T>(
            [value, done = false]() mutable -> std::optional<T> {
              if (done) return std::nullopt;
              done = true;
              return value;
            });
      },
      1);
}

template <class T>
Dataset<T> Dataset<T>::from_tensor_slices(const T& components) {
  int64_t n = 0;
  auto size0 = [&n](const Tensor& t, size_t which) {
    if (t.rank() == 0)
      throw ShapeError(
          "[from_tensor_slices] expected tensors of rank >= 1, got a scalar "
          "as component " +
          std::to_string(which));
    if (which == 0) n = t.dim(0);
    if (t.dim(0) != n)
      throw ShapeError(
          "[from_tensor_slices] expected every component with axis-0 size " +
          std::to_string(n) + " (component 0's), got shape " + t.shape().str() +
          " as component " + std::to_string(which));
  };
  auto slicer = [components](int64_t i) -> T {
    if constexpr (std::is_same_v<T, Tensor>)
      return detail::row(components, i);
    else
      return std::apply(
          [i](const auto&... c) { return T{detail::row(c, i)...}; },
          components);
  };
  if constexpr (std::is_same_v<T, Tensor>) {
    size0(components, 0);
  } else {
    static_assert(detail::is_tuple<T>::value,
                  "from_tensor_slices takes a Tensor or a tuple of Tensors");
    std::apply(
        [&](const auto&... c) {
          size_t k = 0;
          (size0(c, k++), ...);
        },
        components);
  }
  return Dataset(
      [slicer, n] {
        return detail::make_fn_iterator<T>(
            [slicer, n, i = int64_t{0}]() mutable -> std::optional<T> {
              if (i >= n) return std::nullopt;
              return slicer(i++);
            });
      },
      n);
}

template <class T>
template <class G>
Dataset<T> Dataset<T>::from_generator(G gen) {
  return Dataset([gen]() mutable {
    if constexpr (std::is_invocable_v<std::invoke_result_t<G&>&>) {
      return detail::make_fn_iterator<T>(
          [g = gen()]() mutable -> std::optional<T> { return g(); });
    } else {
      return detail::make_fn_iterator<T>(
          [g = gen]() mutable -> std::optional<T> { return g(); });
    }
  });
}

}  // namespace tapeflow::data
