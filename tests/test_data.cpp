// tpf::data: sources and transformations against hand-computed elements.
// Threads (parallel map, prefetch, queues) are in test_data_threads.cpp,
// file readers in test_data_files.cpp, cardinalities in
// test_data_cardinality.cpp.
#include <map>
#include <set>

#include "support/check.hpp"
#include "support/data_helpers.hpp"

namespace data = tpf::data;
using testing::collect;
using testing::ints;
using testing::throws_with;

TEST_CASE("range, take, skip, repeat") {
  CHECK(ints(data::range(5)) == std::vector<int64_t>{0, 1, 2, 3, 4});
  CHECK(ints(data::range(2, 11, 3)) == std::vector<int64_t>{2, 5, 8});
  CHECK(ints(data::range(5, 0, -2)) == std::vector<int64_t>{5, 3, 1});
  CHECK(ints(data::range(3, 3)).empty());
  auto r = data::range(0, 5);
  CHECK(r.make_iterator().get_next()->dtype() == tpf::int64);
  CHECK(r.make_iterator().get_next()->rank() == 0);
  CHECK(ints(r.take(2)) == std::vector<int64_t>{0, 1});
  CHECK(ints(r.take(-1)).size() == 5);
  CHECK(ints(r.take(0)).empty());
  CHECK(ints(r.skip(3)) == std::vector<int64_t>{3, 4});
  CHECK(ints(r.skip(9)).empty());
  CHECK(ints(r.skip(-1)).empty());
  CHECK(ints(r.take(2).repeat(3)) == std::vector<int64_t>{0, 1, 0, 1, 0, 1});
  CHECK(ints(r.take(2).repeat().take(5)) ==
        std::vector<int64_t>{0, 1, 0, 1, 0});
  // Forever over nothing is nothing, not a hang.
  CHECK(ints(r.take(0).repeat()).empty());
  CHECK(ints(r.repeat(0)).empty());
  CHECK_THROWS_AS(data::range(0, 5, 0), tpf::ValueError);
}

TEST_CASE("from_tensors and from_tensor_slices") {
  auto m = tpf::tensor({{1.f, 2.f}, {3.f, 4.f}, {5.f, 6.f}});
  auto whole = collect(data::from_tensors(m));
  REQUIRE(whole.size() == 1);
  CHECK_CLOSE(whole[0], m);

  auto rows = collect(data::from_tensor_slices(m));
  REQUIRE(rows.size() == 3);
  CHECK_CLOSE(rows[1], tpf::tensor({3.f, 4.f}));
  CHECK(rows[2].shape() == tpf::Shape{2});

  auto labels = tpf::tensor<int64_t>({7, 8, 9});
  auto pairs = data::from_tensor_slices(std::tuple{m, labels});
  std::vector<int64_t> seen;
  for (auto& [x, y] : pairs) {
    CHECK(x.shape() == tpf::Shape{2});
    CHECK(y.rank() == 0);
    seen.push_back(y.item<int64_t>());
  }
  CHECK(seen == std::vector<int64_t>{7, 8, 9});
  // Iterating again is a new epoch.
  CHECK(collect(pairs).size() == 3);

  throws_with<tpf::ShapeError>(
      [&] {
        data::from_tensor_slices(std::tuple{m, tpf::tensor({1.f})});
      },
      {"[from_tensor_slices]", "(1,)", "component 1"});
  CHECK_THROWS_AS(data::from_tensor_slices(tpf::scalar(1.0)), tpf::ShapeError);
}

TEST_CASE("from_generator: callable or factory, restarted per epoch") {
  auto counter = [n = 0]() mutable -> std::optional<int> {
    if (n == 3) return std::nullopt;
    return n++;
  };
  auto ds = data::from_generator(counter);
  static_assert(std::is_same_v<decltype(ds), data::Dataset<int>>);
  CHECK(collect(ds) == std::vector<int>{0, 1, 2});
  CHECK(collect(ds) == std::vector<int>{0, 1, 2});

  int epochs = 0;
  auto factory = data::from_generator([&epochs] {
    ++epochs;
    return [i = 10]() mutable -> std::optional<std::string> {
      if (i == 12) return std::nullopt;
      return std::to_string(i++);
    };
  });
  CHECK(collect(factory) == std::vector<std::string>{"10", "11"});
  CHECK(collect(factory) == std::vector<std::string>{"10", "11"});
  CHECK(epochs == 2);
}

TEST_CASE("map deduces the type; filter; tuple components unpack") {
  auto ds = data::range(6);
  auto squares = ds.map([](const tpf::Tensor& x) {
    return x.item<int64_t>() * x.item<int64_t>();
  });
  static_assert(std::is_same_v<decltype(squares), data::Dataset<int64_t>>);
  CHECK(collect(squares) == std::vector<int64_t>{0, 1, 4, 9, 16, 25});
  auto even = squares.filter([](int64_t v) { return v % 2 == 0; });
  CHECK(collect(even) == std::vector<int64_t>{0, 4, 16});

  auto pairs = data::zip(squares, ds.map([](tpf::Tensor x) {
    return std::to_string(x.item<int64_t>());
  }));
  auto joined = pairs.map([](int64_t a, const std::string& b) {
    return b + ":" + std::to_string(a);
  });
  CHECK(collect(joined.take(3)) ==
        std::vector<std::string>{"0:0", "1:1", "2:4"});
  auto big = pairs.filter([](int64_t a, const std::string&) { return a > 9; });
  CHECK(collect(big).size() == 2);
}

TEST_CASE("zip ends with the shortest; enumerate counts") {
  auto a = data::range(0, 3);
  auto b = data::range(10, 100);
  std::vector<std::pair<int64_t, int64_t>> got;
  for (auto& [x, y] : data::zip(a, b))
    got.emplace_back(x.item<int64_t>(), y.item<int64_t>());
  CHECK(got ==
        std::vector<std::pair<int64_t, int64_t>>{{0, 10}, {1, 11}, {2, 12}});
  auto words =
      data::from_generator([i = 0]() mutable -> std::optional<std::string> {
        if (i == 3) return std::nullopt;
        return std::string(1, static_cast<char>('a' + i++));
      });
  auto e = collect(words.enumerate(5));
  REQUIRE(e.size() == 3);
  CHECK(std::get<0>(e[0]) == 5);
  CHECK(std::get<0>(e[2]) == 7);
  CHECK(std::get<1>(e[2]) == "c");
}

TEST_CASE("batch stacks per type; drop_remainder") {
  auto b = collect(data::range(7).batch(3));
  REQUIRE(b.size() == 3);
  CHECK(b[0].shape() == tpf::Shape{3});
  CHECK(b[1].to_vector<int64_t>() == std::vector<int64_t>{3, 4, 5});
  CHECK(b[2].to_vector<int64_t>() == std::vector<int64_t>{6});
  CHECK(collect(data::range(7).batch(3, true)).size() == 2);
  CHECK(collect(data::range(0).batch(3)).empty());

  auto m = tpf::reshape(tpf::arange(0.f, 12.f), {6, 2});
  auto mb = collect(data::from_tensor_slices(m).batch(4));
  REQUIRE(mb.size() == 2);
  CHECK(mb[0].shape() == tpf::Shape{4, 2});
  CHECK_CLOSE(mb[1], tpf::tensor({{8.f, 9.f}, {10.f, 11.f}}));

  // Tuples batch per component; strings become vectors; int64 a tensor.
  auto labels = tpf::tensor<int64_t>({1, 2, 3, 4, 5, 6});
  auto tb =
      collect(data::from_tensor_slices(std::tuple{m, labels})
                  .map([](tpf::Tensor x, tpf::Tensor y) {
                    return std::tuple{x, std::to_string(y.item<int64_t>()),
                                      y.item<int64_t>()};
                  })
                  .batch(4, true));
  REQUIRE(tb.size() == 1);
  auto& [xs, names, ys] = tb[0];
  CHECK(xs.shape() == tpf::Shape{4, 2});
  CHECK(names == std::vector<std::string>{"1", "2", "3", "4"});
  CHECK(ys.dtype() == tpf::int64);
  CHECK(ys.to_vector<int64_t>() == std::vector<int64_t>{1, 2, 3, 4});

  // Elements of different shapes: a ShapeError naming both shapes.
  auto ragged =
      data::from_generator([i = 1]() mutable -> std::optional<tpf::Tensor> {
        if (i == 4) return std::nullopt;
        return tpf::zeros({i++});
      });
  throws_with<tpf::ShapeError>([&] { collect(ragged.batch(3)); },
                               {"[batch]", "(1,)", "(2,)"});
  CHECK_THROWS_AS(ragged.batch(0), tpf::ValueError);
}

TEST_CASE("padded_batch pads to the longest or to a given shape") {
  auto ragged = data::range(1, 4).map([](tpf::Tensor n) {
    const int64_t k = n.item<int64_t>();
    return tpf::fill<float>({k}, static_cast<float>(k));
  });
  auto pb = collect(ragged.padded_batch(2));
  REQUIRE(pb.size() == 2);
  CHECK_CLOSE(pb[0], tpf::tensor({{1.f, 0.f}, {2.f, 2.f}}));
  CHECK_CLOSE(pb[1], tpf::tensor({{3.f, 3.f, 3.f}}));

  auto fixed = collect(ragged.padded_batch(3, {{4}}, -1.0));
  REQUIRE(fixed.size() == 1);
  CHECK_CLOSE(fixed[0], tpf::tensor({{1.f, -1.f, -1.f, -1.f},
                                     {2.f, 2.f, -1.f, -1.f},
                                     {3.f, 3.f, 3.f, -1.f}}));
  CHECK(collect(ragged.padded_batch(2, {}, 0.0, true)).size() == 1);
  throws_with<tpf::ShapeError>([&] { collect(ragged.padded_batch(3, {{2}})); },
                               {"[padded_batch]", "at most 2", "extent 3"});

  // String tensors pad with "".
  auto texts = data::range(1, 3).map([](tpf::Tensor n) {
    return tpf::from_strings(std::vector<std::string>(n.item<int64_t>(), "w"),
                             {n.item<int64_t>()});
  });
  auto padded_texts = collect(texts.padded_batch(2));
  REQUIRE(padded_texts.size() == 1);
  CHECK(padded_texts[0].to_strings() ==
        std::vector<std::string>{"w", "", "w", "w"});

  // Tuples: per-component shapes, -1 = the longest on that axis.
  auto pairs = ragged.map([](tpf::Tensor v) {
    return std::tuple{tpf::reshape(v, {1, -1}), tpf::zeros({2})};
  });
  auto tp = collect(pairs.padded_batch(3, {{2, -1}, {}}));
  REQUIRE(tp.size() == 1);
  CHECK(std::get<0>(tp[0]).shape() == tpf::Shape{3, 2, 3});
  CHECK(std::get<1>(tp[0]).shape() == tpf::Shape{3, 2});
  CHECK_THROWS_AS(pairs.padded_batch(2, {{1}}), tpf::ValueError);
}

TEST_CASE("padded_batch: a padding value per tuple component") {
  // Lengths 1 and 2: float rows padded with -1, their int64 lengths' rows
  // (length k + 1, from 10) with 99.
  auto pairs = data::range(1, 3).map([](tpf::Tensor n) {
    const int64_t k = n.item<int64_t>();
    return std::tuple{
        tpf::fill<float>({k}, 0.5f * static_cast<float>(k)),
        tpf::cast(tpf::arange(10.0, 11.0 + double(k)), tpf::int64)};
  });
  auto b = collect(pairs.padded_batch(2, {{3}, {}}, {-1, 99}));
  REQUIRE(b.size() == 1);
  CHECK_CLOSE(std::get<0>(b[0]),
              tpf::tensor({{0.5f, -1.f, -1.f}, {1.f, 1.f, -1.f}}));
  CHECK(std::get<1>(b[0]).dtype() == tpf::int64);
  CHECK(std::get<1>(b[0]).to_vector<int64_t>() ==
        std::vector<int64_t>{10, 11, 99, 10, 11, 12});
  // One value pads every component.
  auto one = collect(pairs.padded_batch(2, {}, 7.0));
  CHECK_CLOSE(std::get<0>(one[0]), tpf::tensor({{0.5f, 7.f}, {1.f, 1.f}}));
  CHECK(std::get<1>(one[0]).to_vector<int64_t>() ==
        std::vector<int64_t>{10, 11, 7, 10, 11, 12});
  throws_with<tpf::ValueError>(
      [&] {
        pairs.padded_batch(2, {}, {1, 2, 3});
      },
      {"[padded_batch]", "1 padding value or 2", "got 3"});
}

TEST_CASE("shuffle: a permutation, repeatable under a seed") {
  auto ds = data::range(20);
  auto s = ds.shuffle(20, 7);
  const auto e1 = ints(s), e2 = ints(s), plain = ints(ds);
  CHECK(std::multiset<int64_t>(e1.begin(), e1.end()) ==
        std::multiset<int64_t>(plain.begin(), plain.end()));
  CHECK(e1 != plain);
  CHECK(e1 != e2);  // reshuffled each epoch
  // Same seed, same sequence of epochs.
  auto again = ds.shuffle(20, 7);
  CHECK(ints(again) == e1);
  CHECK(ints(again) == e2);
  // Without reshuffling every epoch repeats the first.
  auto fixed = ds.shuffle(20, 7, false);
  CHECK(ints(fixed) == ints(fixed));
  CHECK(ints(ds.shuffle(20, 8)) != e1);
  // buffer_size 1 keeps the order; a small buffer only moves elements a
  // little: element k can't come out before position k - (buffer - 1).
  CHECK(ints(ds.shuffle(1, 3)) == plain);
  const auto local = ints(ds.shuffle(3, 3));
  for (size_t i = 0; i < local.size(); ++i) CHECK(local[i] <= int64_t(i) + 2);
  // repeat() of a shuffled dataset reshuffles per repetition.
  const auto twice = ints(ds.shuffle(20, 7).repeat(2));
  CHECK(std::vector<int64_t>(twice.begin(), twice.begin() + 20) == e1);
  CHECK(std::vector<int64_t>(twice.begin() + 20, twice.end()) == e2);
}

TEST_CASE("shuffle's generator: SplitMix64, uniform picks") {
  // The reference outputs of SplitMix64 for seed 0: the same orders on
  // every platform and standard library.
  data::detail::ShuffleRng rng(0);
  CHECK(rng.next() == 0xe220a8397b1dcdafULL);
  CHECK(rng.next() == 0x6e789e6aa1b965f4ULL);
  // below(n) without modulo bias: 6 slots, 60000 picks, each within 4 sigma
  // (sigma = sqrt(60000 * 1/6 * 5/6) ~ 91) of 10000.
  data::detail::ShuffleRng picks(42);
  std::vector<int> counts(6, 0);
  for (int i = 0; i < 60000; ++i) ++counts[picks.below(6)];
  for (int c : counts) CHECK(std::abs(c - 10000) < 365);
  CHECK(picks.below(1) == 0);
  // Unseeded shuffles differ from one another.
  CHECK(data::detail::unseeded() != data::detail::unseeded());
}

TEST_CASE("cache replays the first complete epoch") {
  int calls = 0;
  auto ds = data::range(4)
                .map([&calls](tpf::Tensor x) {
                  ++calls;
                  return x.item<int64_t>();
                })
                .cache();
  // A partial epoch caches nothing.
  CHECK(collect(ds.take(2)) == std::vector<int64_t>{0, 1});
  CHECK(collect(ds) == std::vector<int64_t>{0, 1, 2, 3});
  const int after_first = calls;
  CHECK(collect(ds) == std::vector<int64_t>{0, 1, 2, 3});
  CHECK(collect(ds.repeat(2)).size() == 8);
  CHECK(calls == after_first);
}

TEST_CASE("interleave: TensorFlow's documented order") {
  // tf.data.Dataset.range(1, 6).interleave(
  //     lambda x: Dataset.from_tensors(x).repeat(6), cycle_length=2,
  //     block_length=4)
  auto ds = data::range(1, 6).interleave(
      [](tpf::Tensor x) { return data::from_tensors(x).repeat(6); }, 2, 4);
  CHECK(ints(ds) == std::vector<int64_t>{1, 1, 1, 1, 2, 2, 2, 2, 1, 1,
                                         2, 2, 3, 3, 3, 3, 4, 4, 4, 4,
                                         3, 3, 4, 4, 5, 5, 5, 5, 5, 5});
  // Inner datasets of different lengths, block_length 1.
  auto lens = data::range(1, 4).interleave(
      [](tpf::Tensor n) {
        const int64_t k = n.item<int64_t>();
        return data::range(10 * k, 10 * k + k);
      },
      3);
  CHECK(ints(lens) == std::vector<int64_t>{10, 20, 30, 21, 31, 32});
  CHECK_THROWS_AS(data::range(3).interleave(
                      [](tpf::Tensor x) { return data::from_tensors(x); }, 0),
                  tpf::ValueError);
}

TEST_CASE("batch and interleave sizes beyond the data cost only the data") {
  // tf.data: batch(2^40) of 5 elements is one batch of 5; a cycle of 2^40
  // over 3 inputs opens the 3.
  const int64_t huge = int64_t{1} << 40;
  auto batches = collect(data::range(5).batch(huge));
  REQUIRE(batches.size() == 1);
  CHECK(batches[0].shape() == tpf::Shape{5});
  CHECK(collect(data::range(5).batch(huge, true)).empty());
  auto from = [](tpf::Tensor n) {
    const int64_t k = n.item<int64_t>();
    return data::range(10 * k, 10 * k + k);
  };
  CHECK(ints(data::range(1, 4).interleave(from, huge)) ==
        std::vector<int64_t>{10, 20, 30, 21, 31, 32});
  CHECK(ints(data::range(1, 4).interleave(from, huge, 2)) ==
        std::vector<int64_t>{10, 20, 21, 30, 31, 32});
  CHECK(ints(data::range(1, 4).interleave(from, huge, 1, 3)) ==
        std::vector<int64_t>{10, 20, 30, 21, 31, 32});
  CHECK(ints(data::range(0).interleave(from, huge)).empty());
}

TEST_CASE("ignore_errors skips only data and I/O errors") {
  auto flaky = [](auto error) {
    return data::range(6).map([error](tpf::Tensor x) {
      const int64_t v = x.item<int64_t>();
      if (v % 2 == 1) throw decltype(error)("[flaky] odd element");
      return v;
    });
  };
  CHECK(collect(flaky(tpf::DataLossError("")).ignore_errors()) ==
        std::vector<int64_t>{0, 2, 4});
  CHECK(collect(flaky(tpf::IOError("")).ignore_errors()) ==
        std::vector<int64_t>{0, 2, 4});
  CHECK_THROWS_AS(collect(flaky(tpf::ValueError("")).ignore_errors()),
                  tpf::ValueError);
  CHECK_THROWS_AS(collect(flaky(tpf::DataLossError(""))), tpf::DataLossError);
}

TEST_CASE("explicit iterators: nullopt at the end, restartable epochs") {
  auto ds = data::range(2);
  auto it = ds.make_iterator();
  CHECK(it.get_next()->item<int64_t>() == 0);
  CHECK(it.get_next()->item<int64_t>() == 1);
  CHECK_FALSE(it.get_next().has_value());
  CHECK_FALSE(it.get_next().has_value());
  auto again = ds.make_iterator();
  CHECK(again.get_next()->item<int64_t>() == 0);
  // An error leaves the iterator usable.
  auto bad = data::range(3).map([](tpf::Tensor x) {
    if (x.item<int64_t>() == 1) throw tpf::ValueError("[bad] one");
    return x.item<int64_t>();
  });
  auto bit = bad.make_iterator();
  CHECK(*bit.get_next() == 0);
  CHECK_THROWS_AS(bit.get_next(), tpf::ValueError);
  CHECK(*bit.get_next() == 2);
  CHECK_FALSE(bit.get_next().has_value());
}

TEST_CASE("parallel map and prefetch over tensor ops") {
  // Tensor ops on worker threads (allocator, kernels, OpenMP) while the
  // consumer batches and reduces on its own.
  auto ds = data::range(64)
                .map(
                    [](tpf::Tensor i) {
                      auto v = tpf::full({16}, double(i.item<int64_t>()));
                      return tpf::sum(v * 2.f + 1.f);
                    },
                    4)
                .batch(8)
                .prefetch(2);
  for (int epoch = 0; epoch < 2; ++epoch) {
    std::vector<double> got;
    for (auto& b : ds)
      for (float v : b.to_vector<float>()) got.push_back(v);
    REQUIRE(got.size() == 64);
    for (size_t i = 0; i < got.size(); ++i)
      CHECK(got[i] == doctest::Approx(16.0 * (2.0 * double(i) + 1.0)));
  }
}

TEST_CASE("config::set_inter_op_threads sizes the pool, then is fixed") {
  // The first parallel map of this process starts the pool.
  const auto item = [](const tpf::Tensor& x) { return x.item<int64_t>(); };
  int64_t sum = 0;
  for (int64_t x : data::range(8).map(item, 2)) sum += x;
  CHECK(sum == 28);
  const int n = tpf::config::inter_op_threads();
  CHECK(n >= 1);
  tpf::config::set_inter_op_threads(n);  // the same count: nothing changes
  testing::expect_error<tpf::ValueError>(
      [&] { tpf::config::set_inter_op_threads(n + 1); },
      "[set_inter_op_threads] expected a call before the inter-op pool "
      "started");
  testing::expect_error<tpf::ValueError>(
      [] { tpf::config::set_inter_op_threads(0); },
      "[set_inter_op_threads] expected a thread count in [1, 4096], got 0");
  CHECK(tpf::config::inter_op_threads() == n);
}
