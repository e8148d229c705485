#pragma once
// The transformations of Dataset<T> that need nothing more than an upstream
// stage: filter, repeat, take, skip, shard, enumerate, ignore_errors and
// zip. Included by dataset.hpp; include that.
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <utility>

#include "tapeflow/core/error.hpp"
#include "tapeflow/data/dataset_core.hpp"

namespace tapeflow::data {

template <class T>
template <class P>
Dataset<T> Dataset<T>::filter(P pred) const {
  Dataset up = *this;
  return Dataset([up, pred] {
    return detail::make_fn_iterator<T>(
        [in = up.make_impl(), pred]() mutable -> std::optional<T> {
          while (std::optional<T> x = in->next())
            if (detail::invoke_element(pred, std::as_const(*x))) return x;
          return std::nullopt;
        });
  });
}

template <class T>
Dataset<T> Dataset<T>::repeat(int64_t count) const {
  Dataset up = *this;
  return Dataset(
      [up, count] {
        return detail::make_fn_iterator<T>(
            [up, count, in = std::unique_ptr<IteratorImpl<T>>(),
             epoch = int64_t{0}, got = false]() mutable -> std::optional<T> {
              while (count < 0 || epoch < count) {
                if (!in) {
                  in = up.make_impl();
                  got = false;
                }
                if (std::optional<T> x = in->next()) {
                  got = true;
                  return x;
                }
                in.reset();
                ++epoch;
                // An empty epoch would make repeat() spin forever.
                if (!got) break;
              }
              return std::nullopt;
            });
      },
      detail::repeat_cardinality(cardinality_, count));
}

template <class T>
Dataset<T> Dataset<T>::take(int64_t n) const {
  Dataset up = *this;
  return Dataset(
      [up, n] {
        return detail::make_fn_iterator<T>(
            [in = up.make_impl(), n,
             taken = int64_t{0}]() mutable -> std::optional<T> {
              if (n >= 0 && taken >= n) return std::nullopt;
              std::optional<T> x = in->next();
              if (x) ++taken;
              return x;
            });
      },
      detail::take_cardinality(cardinality_, n));
}

template <class T>
Dataset<T> Dataset<T>::skip(int64_t n) const {
  Dataset up = *this;
  return Dataset(
      [up, n] {
        return detail::make_fn_iterator<T>(
            [in = up.make_impl(), n,
             skipped = false]() mutable -> std::optional<T> {
              if (!skipped) {
                for (int64_t i = 0; n < 0 || i < n; ++i)
                  if (!in->next()) return std::nullopt;
                skipped = true;
              }
              return in->next();
            });
      },
      detail::skip_cardinality(cardinality_, n));
}

template <class T>
Dataset<T> Dataset<T>::shard(int64_t num_shards, int64_t index) const {
  if (num_shards < 1 || index < 0 || index >= num_shards)
    throw ValueError("[shard] expected 0 <= index < num_shards, got index " +
                     std::to_string(index) + " of " +
                     std::to_string(num_shards));
  Dataset up = *this;
  return Dataset(
      [up, num_shards, index] {
        return detail::make_fn_iterator<T>(
            [in = up.make_impl(), num_shards, index,
             started = false]() mutable -> std::optional<T> {
              for (int64_t i = 0; i < (started ? num_shards - 1 : index); ++i)
                if (!in->next()) return std::nullopt;
              started = true;
              return in->next();
            });
      },
      detail::shard_cardinality(cardinality_, num_shards, index));
}

template <class T>
Dataset<std::tuple<int64_t, T>> Dataset<T>::enumerate(int64_t start) const {
  using E = std::tuple<int64_t, T>;
  Dataset up = *this;
  return Dataset<E>(
      [up, start] {
        return detail::make_fn_iterator<E>(
            [in = up.make_impl(), i = start,
             past_end = false]() mutable -> std::optional<E> {
              std::optional<T> x = in->next();
              if (!x) return std::nullopt;
              // The count stops at INT64_MAX rather than wrapping.
              if (past_end)
                throw ValueError(
                    "[enumerate] expected counts up to 2^63 - 1, got one "
                    "more element");
              const int64_t count = i;
              if (i == std::numeric_limits<int64_t>::max())
                past_end = true;
              else
                ++i;
              return E{count, std::move(*x)};
            });
      },
      cardinality_);
}

template <class T>
Dataset<T> Dataset<T>::ignore_errors() const {
  Dataset up = *this;
  return Dataset([up] {
    return detail::make_fn_iterator<T>(
        [in = up.make_impl()]() mutable -> std::optional<T> {
          for (;;) {
            try {
              return in->next();
            } catch (const DataLossError&) {
            } catch (const IOError&) {
            }
          }
        });
  });
}

template <class... Ts>
Dataset<std::tuple<Ts...>> zip(const Dataset<Ts>&... datasets) {
  static_assert(sizeof...(Ts) > 0,
                "zip takes one dataset at least (tf.data.Dataset.zip)");
  using E = std::tuple<Ts...>;
  return Dataset<E>(
      [datasets...] {
        return detail::make_fn_iterator<E>(
            [ins = std::make_tuple(
                 datasets.make_impl()...)]() mutable -> std::optional<E> {
              std::tuple<std::optional<Ts>...> parts;
              bool ended = false;
              // Stops at the first dataset that ends (in order, like tf.data).
              std::apply(
                  [&](auto&... in) {
                    std::apply(
                        [&](auto&... part) {
                          ((ended = ended || !(part = in->next()).has_value()),
                           ...);
                        },
                        parts);
                  },
                  ins);
              if (ended) return std::nullopt;
              return std::apply(
                  [](auto&... part) { return E{std::move(*part)...}; }, parts);
            });
      },
      detail::zip_cardinality({datasets.cardinality()...}));
}

}  // namespace tapeflow::data
