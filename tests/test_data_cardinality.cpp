// tpf::data cardinalities (counted, infinite, unknown, as tf.data) and
// range/shard near the int64 limits, against the elements an epoch yields.
#include "support/check.hpp"
#include "support/data_helpers.hpp"

namespace data = tpf::data;
using testing::collect;
using testing::ints;

TEST_CASE("cardinality: counted, infinite or unknown, as in tf.data") {
  const int64_t inf = data::kInfiniteCardinality;
  const int64_t unknown = data::kUnknownCardinality;
  CHECK(inf == -1);
  CHECK(unknown == -2);
  auto r = data::range(10);
  CHECK(r.cardinality() == 10);
  CHECK(data::range(2, 11, 3).cardinality() == 3);
  CHECK(data::range(-5, 5, 3).cardinality() == 4);
  CHECK(data::range(5, 0, -2).cardinality() == 3);
  CHECK(data::range(3, 3).cardinality() == 0);
  CHECK(data::range(5, 0).cardinality() == 0);
  // INT64_MIN, -1, INT64_MAX - 1: a span wider than INT64_MAX.
  CHECK(data::range(INT64_MIN, INT64_MAX, INT64_MAX).cardinality() == 3);
  auto m = tpf::zeros({3, 2});
  CHECK(data::from_tensors(m).cardinality() == 1);
  CHECK(data::from_tensor_slices(m).cardinality() == 3);
  CHECK(data::from_tensor_slices(std::tuple{m, m}).cardinality() == 3);

  CHECK(r.batch(3).cardinality() == 4);
  CHECK(r.batch(3, true).cardinality() == 3);
  CHECK(r.batch(5, true).cardinality() == 2);
  CHECK(r.take(4).cardinality() == 4);
  CHECK(r.take(20).cardinality() == 10);
  CHECK(r.take(-1).cardinality() == 10);
  CHECK(r.skip(4).cardinality() == 6);
  CHECK(r.skip(20).cardinality() == 0);
  CHECK(r.skip(-1).cardinality() == 0);
  CHECK(r.repeat(3).cardinality() == 30);
  CHECK(r.repeat(0).cardinality() == 0);
  CHECK(r.repeat().cardinality() == inf);
  CHECK(data::range(0).repeat().cardinality() == 0);
  CHECK(r.repeat().take(7).cardinality() == 7);
  CHECK(r.repeat().skip(3).cardinality() == inf);
  CHECK(r.repeat().batch(4).cardinality() == inf);
  auto same = [](int64_t x) { return x; };
  auto ints_ds = r.map([](tpf::Tensor x) { return x.item<int64_t>(); });
  CHECK(ints_ds.cardinality() == 10);
  CHECK(ints_ds.map(same, 3).cardinality() == 10);
  CHECK(r.enumerate().cardinality() == 10);
  CHECK(r.shuffle(4, 1).cardinality() == 10);
  CHECK(r.cache().cardinality() == 10);
  CHECK(r.prefetch(2).cardinality() == 10);
  CHECK(data::zip(r, data::range(3)).cardinality() == 3);
  CHECK(data::zip(r, r.repeat()).cardinality() == 10);
  CHECK(data::zip(r.repeat(), r.repeat()).cardinality() == inf);

  // What depends on the data is unknown; repeat() forever still infinite.
  auto kept = ints_ds.filter([](int64_t x) { return x > 2; });
  CHECK(kept.cardinality() == unknown);
  CHECK(kept.take(3).cardinality() == unknown);
  CHECK(kept.batch(2).cardinality() == unknown);
  CHECK(kept.repeat(2).cardinality() == unknown);
  CHECK(kept.repeat().cardinality() == inf);
  CHECK(data::zip(data::range(0), kept).cardinality() == unknown);
  CHECK(ints_ds.ignore_errors().cardinality() == unknown);
  CHECK(data::from_generator([]() -> std::optional<int> {
          return 1;
        }).cardinality() == unknown);
  CHECK(r.interleave([](tpf::Tensor x) { return data::from_tensors(x); }, 2)
            .cardinality() == unknown);

  // Known counts are the counts an epoch produces.
  auto ragged = data::range(1, 4).map(
      [](tpf::Tensor n) { return tpf::zeros({n.item<int64_t>()}); });
  for (const auto& ds :
       {r.batch(3), r.skip(7), r.take(4).repeat(2), ragged.padded_batch(2),
        ragged.padded_batch(2, {}, 0.0, true)})
    CHECK(ds.cardinality() == static_cast<int64_t>(collect(ds).size()));
}

TEST_CASE("range and shard near the int64 limits: Python's range counts") {
  // take() bounds the old, wrapping generator so that it fails, not hangs.
  auto firsts = [](const data::Dataset<tpf::Tensor>& ds) {
    return ints(ds.take(8));
  };
  const int64_t big = int64_t{1} << 62;
  auto r = data::range(0, INT64_MAX, big);
  CHECK(r.cardinality() == 2);
  CHECK(firsts(r) == std::vector<int64_t>{0, big});
  auto wide = data::range(INT64_MIN, INT64_MAX, INT64_MAX);
  CHECK(firsts(wide) == std::vector<int64_t>{INT64_MIN, -1, INT64_MAX - 1});
  CHECK(static_cast<int64_t>(collect(wide.take(100)).size()) ==
        wide.cardinality());
  auto down = data::range(INT64_MAX, INT64_MIN, INT64_MIN);
  CHECK(down.cardinality() == 2);
  CHECK(firsts(down) == std::vector<int64_t>{INT64_MAX, -1});
  CHECK(firsts(data::range(INT64_MAX - 2, INT64_MAX, 5)) ==
        std::vector<int64_t>{INT64_MAX - 2});
  CHECK(firsts(data::range(INT64_MIN + 2, INT64_MIN, -5)) ==
        std::vector<int64_t>{INT64_MIN + 2});
  CHECK(ints(data::range(INT64_MAX - 3, INT64_MAX)) ==
        std::vector<int64_t>{INT64_MAX - 3, INT64_MAX - 2, INT64_MAX - 1});
  CHECK(ints(data::range(INT64_MIN + 3, INT64_MIN, -1)) ==
        std::vector<int64_t>{INT64_MIN + 3, INT64_MIN + 2, INT64_MIN + 1});
  // 2^64 - 1 elements: the count saturates, the elements are right.
  auto all = data::range(INT64_MIN, INT64_MAX);
  CHECK(all.cardinality() == INT64_MAX);
  CHECK(ints(all.take(2)) == std::vector<int64_t>{INT64_MIN, INT64_MIN + 1});

  // shard: n - index + num_shards - 1 must not overflow.
  auto s = data::range(10).shard(INT64_MAX, 0);
  CHECK(s.cardinality() == 1);
  CHECK(ints(s) == std::vector<int64_t>{0});
  auto last = data::range(10).shard(INT64_MAX, INT64_MAX - 1);
  CHECK(last.cardinality() == 0);
  CHECK(ints(last).empty());
  CHECK(data::range(10).shard(INT64_MAX, 9).cardinality() == 1);
  CHECK(data::range(INT64_MAX).shard(3, 1).cardinality() ==
        3074457345618258602);
  CHECK(data::range(INT64_MAX).shard(INT64_MAX, 0).cardinality() == 1);
  CHECK(data::range(INT64_MAX).shard(INT64_MAX, INT64_MAX - 1).cardinality() ==
        1);
  CHECK(data::range(INT64_MAX - 1)
            .shard(INT64_MAX, INT64_MAX - 1)
            .cardinality() == 0);
  auto ten = data::range(10);
  for (int64_t k : {1, 2, 3, 4, 9, 10, 11})
    for (int64_t i = 0; i < k; ++i) {
      auto sh = ten.shard(k, i);
      CHECK(sh.cardinality() == static_cast<int64_t>(collect(sh).size()));
    }
}
