#pragma once
// Input for data parallelism: each rank's part of every global batch.
#include <cstdint>
#include <string>
#include <tuple>

#include "tapeflow/data/dataset.hpp"
#include "tapeflow/dist/communicator.hpp"
#include "tapeflow/ops/shape.hpp"

namespace tapeflow::dist {

namespace detail {
inline Tensor rows(const Tensor& t, int64_t begin, int64_t count) {
  std::vector<int64_t> b(static_cast<size_t>(t.rank()), 0);
  std::vector<int64_t> size(t.shape().begin(), t.shape().end());
  b[0] = begin;
  size[0] = count;
  return slice(t, b, size);
}
template <class... Ts>
std::tuple<Ts...> rows(const std::tuple<Ts...>& t, int64_t begin,
                       int64_t count) {
  return std::apply(
      [&](const auto&... c) {
        return std::tuple<Ts...>(rows(c, begin, count)...);
      },
      t);
}
}  // namespace detail

/**
 * Batches `dataset` into global batches of `global_batch` elements and gives
 * this rank its contiguous slice: rank k of N gets rows [k*b, (k+1)*b) with
 * b = global_batch / N. The whole job thus trains on the batches one process
 * would see, which simulate() reproduces. A last, incomplete global batch is
 * dropped, so every rank runs the same number of steps.
 */
template <class T>
auto shard_batches(const data::Dataset<T>& dataset, int64_t global_batch,
                   const Communicator& comm = world()) {
  const int64_t ranks = comm.size();
  if (global_batch < 1 || global_batch % ranks != 0)
    throw ValueError(
        "[shard_batches] expected a global batch that is a "
        "positive multiple of " +
        std::to_string(ranks) + " (the ranks), got " +
        std::to_string(global_batch));
  const int64_t local = global_batch / ranks;
  const int64_t begin = local * comm.rank();
  return dataset.batch(global_batch, /*drop_remainder=*/true)
      .map([begin, local](const auto& batch) {
        return detail::rows(batch, begin, local);
      });
}

}  // namespace tapeflow::dist
