#pragma once
// Dataset::cardinality(): how many elements a pipeline produces, as far as
// its description tells without running it. The rules of each stage are
// tf.data's (tensorflow/core/kernels/data/*_dataset_op.cc CardinalityInternal),
// so a pipeline reports what its TensorFlow twin reports.
#include <algorithm>
#include <cstdint>
#include <initializer_list>

namespace tapeflow::data {

/** cardinality() of an endless dataset (tf.data.INFINITE_CARDINALITY). */
inline constexpr int64_t kInfiniteCardinality = -1;
/**
 * cardinality() when the count depends on the data (filter, generators,
 * files): tf.data.UNKNOWN_CARDINALITY.
 */
inline constexpr int64_t kUnknownCardinality = -2;

namespace detail {

inline bool known_cardinality(int64_t n) {
  return n >= 0;
}

/** batch(size, drop_remainder) of n elements. */
inline int64_t batch_cardinality(int64_t n, int64_t size, bool drop_remainder) {
  if (!known_cardinality(n)) return n;
  return drop_remainder ? n / size : n / size + (n % size != 0);
}

/** repeat(count) of n elements; a negative count repeats forever. */
inline int64_t repeat_cardinality(int64_t n, int64_t count) {
  if (n == 0 || count == 0) return 0;
  if (count < 0) return kInfiniteCardinality;
  if (!known_cardinality(n)) return n;
  // Saturates: a count this large is as good as endless.
  return n > INT64_MAX / count ? kInfiniteCardinality : n * count;
}

/** take(count) of n elements; a negative count takes all. */
inline int64_t take_cardinality(int64_t n, int64_t count) {
  if (n == kUnknownCardinality) return n;
  if (n == kInfiniteCardinality) return count < 0 ? n : count;
  return count < 0 ? n : std::min(n, count);
}

/** skip(count) of n elements; a negative count skips all. */
inline int64_t skip_cardinality(int64_t n, int64_t count) {
  if (!known_cardinality(n)) return n;
  return count < 0 ? 0 : std::max<int64_t>(0, n - count);
}

/** shard(num_shards, index) of a dataset of n elements. */
inline int64_t shard_cardinality(int64_t n, int64_t num_shards, int64_t index) {
  if (!known_cardinality(n)) return n;
  // Elements index, index + num_shards, ... below n; written so that nothing
  // overflows for any 0 <= index < num_shards <= INT64_MAX.
  return n > index ? (n - index - 1) / num_shards + 1 : 0;
}

/** zip of datasets of these cardinalities: the shortest. */
inline int64_t zip_cardinality(std::initializer_list<int64_t> ns) {
  int64_t shortest = kInfiniteCardinality;
  for (int64_t n : ns) {
    // Unknown wins even over an empty dataset, as in tf.data.
    if (n == kUnknownCardinality) return n;
    if (n != kInfiniteCardinality)
      shortest = shortest == kInfiniteCardinality ? n : std::min(shortest, n);
  }
  return shortest;
}

}  // namespace detail

}  // namespace tapeflow::data
