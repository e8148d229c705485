#pragma once
// The batching transformations Dataset<T>::batch and padded_batch:
// consecutive elements grouped and combined by the traits of
// batch_traits.hpp. Included by dataset.hpp; include that.
#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tapeflow/data/dataset_core.hpp"

namespace tapeflow::data {

namespace detail {
/**
 * Fills `elements` with up to `batch_size` elements of `in`; false when there
 * is no batch to make (the end, or a short last batch that is dropped).
 */
template <class T>
bool next_batch(IteratorImpl<T>& in, int64_t batch_size, bool drop_remainder,
                std::vector<T>& elements) {
  // batch_size only bounds the batch: a batch(1 << 40) of a short dataset is
  // one batch of everything, so room grows with the elements that arrive.
  constexpr int64_t kReservedUpFront = 1024;
  elements.reserve(static_cast<size_t>(std::min(batch_size, kReservedUpFront)));
  while (static_cast<int64_t>(elements.size()) < batch_size) {
    std::optional<T> x = in.next();
    if (!x) break;
    elements.push_back(std::move(*x));
  }
  const auto n = static_cast<int64_t>(elements.size());
  return n > 0 && !(drop_remainder && n < batch_size);
}
}  // namespace detail

template <class T>
Dataset<batch_t<T>> Dataset<T>::batch(int64_t batch_size,
                                      bool drop_remainder) const {
  if (batch_size < 1)
    throw ValueError("[batch] expected batch_size >= 1, got " +
                     std::to_string(batch_size));
  Dataset up = *this;
  using B = batch_t<T>;
  return Dataset<B>(
      [up, batch_size, drop_remainder] {
        return detail::make_fn_iterator<B>(
            [in = up.make_impl(), batch_size,
             drop_remainder]() mutable -> std::optional<B> {
              std::vector<T> elements;
              if (!detail::next_batch(*in, batch_size, drop_remainder,
                                      elements))
                return std::nullopt;
              return BatchTraits<T>::combine(std::move(elements), "batch");
            });
      },
      detail::batch_cardinality(cardinality_, batch_size, drop_remainder));
}

template <class T>
Dataset<T> Dataset<T>::padded_batch(
    int64_t batch_size, std::vector<std::vector<int64_t>> padded_shapes,
    PaddingValues padding_values, bool drop_remainder) const {
  using Traits = PaddedBatchTraits<T>;
  if (batch_size < 1)
    throw ValueError("[padded_batch] expected batch_size >= 1, got " +
                     std::to_string(batch_size));
  if (!padded_shapes.empty() && padded_shapes.size() != Traits::components)
    throw ValueError("[padded_batch] expected " +
                     std::to_string(Traits::components) +
                     " padded shapes (one per component) or none, got " +
                     std::to_string(padded_shapes.size()));
  for (const std::vector<int64_t>& shape : padded_shapes)
    for (const int64_t extent : shape)
      if (extent < -1)
        throw ValueError(
            "[padded_batch] expected padded extents >= 0, or -1 for the "
            "longest, got " +
            std::to_string(extent));
  if (padding_values.size() != 1 && padding_values.size() != Traits::components)
    throw ValueError("[padded_batch] expected 1 padding value or " +
                     std::to_string(Traits::components) +
                     " (one per component), got " +
                     std::to_string(padding_values.size()));
  Dataset up = *this;
  return Dataset(
      [up, batch_size, padded_shapes, padding_values, drop_remainder] {
        return detail::make_fn_iterator<T>(
            [in = up.make_impl(), batch_size, padded_shapes, padding_values,
             drop_remainder]() mutable -> std::optional<T> {
              std::vector<T> elements;
              if (!detail::next_batch(*in, batch_size, drop_remainder,
                                      elements))
                return std::nullopt;
              return Traits::combine(std::move(elements), padded_shapes,
                                     padding_values, "padded_batch");
            });
      },
      detail::batch_cardinality(cardinality_, batch_size, drop_remainder));
}

}  // namespace tapeflow::data
