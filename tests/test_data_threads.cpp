// tpf::data's threads: parallel map, prefetch and parallel interleave
// (queues: test_data_queues.cpp). Only header-only parts (elements are plain
// integers, no Tensor), so that the same file also builds as the
// ThreadSanitizer test (data_tsan) without an instrumented libtapeflow.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "tapeflow/data/dataset.hpp"

namespace data = tapeflow::data;
namespace tpf = tapeflow;
using namespace std::chrono_literals;

namespace {

/** 0, 1, ..., n - 1 (forever when n < 0), counting the calls in `pulled`. */
data::Dataset<int64_t> counting(int64_t n,
                                std::shared_ptr<std::atomic<int64_t>> pulled) {
  return data::from_generator([n, pulled] {
    return [n, pulled, i = int64_t{0}]() mutable -> std::optional<int64_t> {
      if (n >= 0 && i == n) return std::nullopt;
      pulled->fetch_add(1);
      return i++;
    };
  });
}

data::Dataset<int64_t> iota(int64_t n) {
  return counting(n, std::make_shared<std::atomic<int64_t>>(0));
}

template <class T>
std::vector<T> collect(const data::Dataset<T>& ds) {
  std::vector<T> out;
  for (auto& x : ds) out.push_back(x);
  return out;
}

std::vector<int64_t> expected_iota(int64_t n, int64_t mul = 1) {
  std::vector<int64_t> v;
  for (int64_t i = 0; i < n; ++i) v.push_back(i * mul);
  return v;
}

}  // namespace

TEST_CASE("parallel map keeps the input order") {
  // Later elements finish first: the output must not follow.
  auto slow_first = [](int64_t x) {
    std::this_thread::sleep_for(std::chrono::microseconds((7 - x % 8) * 50));
    return x * 3;
  };
  for (int64_t workers : {int64_t{2}, int64_t{4}, int64_t{8}, data::kAutotune})
    CHECK(collect(iota(200).map(slow_first, workers)) == expected_iota(200, 3));
  CHECK(collect(iota(0).map(slow_first, 4)).empty());
  CHECK_THROWS_AS(iota(3).map(slow_first, 0), tpf::ValueError);
}

TEST_CASE("parallel map runs calls concurrently") {
  std::atomic<int> running{0}, most{0};
  auto f = [&](int64_t x) {
    const int now = ++running;
    int seen = most.load();
    while (now > seen && !most.compare_exchange_weak(seen, now)) {
    }
    std::this_thread::sleep_for(2ms);
    --running;
    return x;
  };
  CHECK(collect(iota(40).map(f, 4)) == expected_iota(40));
  CHECK(most.load() > 1);
  CHECK(most.load() <= 4);
}

TEST_CASE("parallel maps of all pipelines share the inter-op pool") {
  std::mutex mu;
  std::set<std::thread::id> callers;
  bool all_on_pool = true;
  auto f = [&](int64_t x) {
    std::this_thread::sleep_for(100us);
    std::lock_guard lock(mu);
    callers.insert(std::this_thread::get_id());
    all_on_pool = all_on_pool && data::detail::InterOpPool::on_pool_thread();
    return x;
  };
  std::vector<std::thread> consumers;
  std::atomic<int> right{0};
  for (int p = 0; p < 4; ++p) {
    consumers.emplace_back([&] {
      if (collect(iota(100).map(f, 8)) == expected_iota(100)) ++right;
    });
  }
  for (auto& t : consumers) t.join();
  CHECK(right.load() == 4);
  const int pool = data::detail::g_inter_op_pool_size.load();
  CHECK(pool == data::detail::inter_op_threads_wanted());
  // 4 pipelines x 8 calls in flight, on the pool's threads only.
  CHECK(all_on_pool);
  CHECK(callers.size() >= 1);
  CHECK(static_cast<int>(callers.size()) <= pool);
}

TEST_CASE("a map function may read a parallel pipeline of its own") {
  // Every pool thread can be inside an outer call, waiting for inner calls
  // queued behind it: the waiting threads run them.
  auto inner_sum = [](int64_t x) {
    int64_t sum = 0;
    for (int64_t v : iota(10).map([x](int64_t i) { return i * x; }, 4))
      sum += v;
    return sum;
  };
  std::vector<int64_t> expected;
  for (int64_t x = 0; x < 16; ++x) expected.push_back(45 * x);
  CHECK(collect(iota(16).map(inner_sum, 8)) == expected);
}

TEST_CASE("a map function may read a prefetched or interleaved pipeline") {
  // The inner pipeline's own threads (prefetch's producer, interleave's
  // workers) wait on pool calls queued behind the outer calls that wait on
  // them: the outer calls run those while they wait (both hung).
  auto prefetched = [](int64_t x) {
    int64_t sum = 0;
    for (int64_t v :
         iota(10).map([x](int64_t i) { return i * x; }, 4).prefetch(1))
      sum += v;
    return sum;
  };
  auto interleaved = [](int64_t x) {
    int64_t sum = 0;
    for (int64_t v : iota(4).interleave(
             [x](int64_t j) {
               return iota(3).map([x, j](int64_t i) { return x * (i + j); }, 2);
             },
             2, 1, 2))
      sum += v;
    return sum;
  };
  std::vector<int64_t> expected;
  for (int64_t x = 0; x < 16; ++x) expected.push_back(45 * x);
  CHECK(collect(iota(16).map(prefetched, 8)) == expected);
  // sum over j < 4, i < 3 of x (i + j) = x (4 * 3 + 3 * 6) = 30 x
  std::vector<int64_t> expected30;
  for (int64_t x = 0; x < 16; ++x) expected30.push_back(30 * x);
  CHECK(collect(iota(16).map(interleaved, 8)) == expected30);
}

TEST_CASE("a map function may leave a threaded pipeline of its own early") {
  // Destruction joins the inner threads, which may wait on pool calls queued
  // behind the outer calls: the joining pool threads run them (it hung).
  auto first_of = [](int64_t x) {
    auto prefetched = iota(-1)
                          .map([x](int64_t i) { return i + x; }, 4)
                          .prefetch(1)
                          .make_iterator();
    auto interleaved =
        iota(-1)
            .interleave(
                [x](int64_t j) {
                  return iota(-1).map([x, j](int64_t i) { return x + i + j; },
                                      2);
                },
                2, 1, 2)
            .make_iterator();
    return *prefetched.get_next() + *interleaved.get_next();
  };
  std::vector<int64_t> expected;
  for (int64_t x = 0; x < 16; ++x) expected.push_back(2 * x);
  CHECK(collect(iota(16).map(first_of, 8)) == expected);
}

TEST_CASE("threads sharing an iterator each get distinct elements") {
  constexpr int64_t n = 2000;
  for (int stage = 0; stage < 3; ++stage) {
    CAPTURE(stage);
    auto id = [](int64_t x) { return x; };
    auto ds = stage == 0   ? iota(n).map(id)
              : stage == 1 ? iota(n).map(id, 3)
                           : iota(n).map(id, 2).prefetch(4);
    auto it = ds.make_iterator();
    std::mutex mu;
    std::vector<int64_t> got;
    auto take_all = [&] {
      while (auto v = it.get_next()) {
        std::lock_guard lock(mu);
        got.push_back(*v);
      }
    };
    std::thread a(take_all), b(take_all);
    a.join();
    b.join();
    std::sort(got.begin(), got.end());
    CHECK(got == expected_iota(n));
  }
}

TEST_CASE("a huge num_parallel_calls reads ahead a bounded window") {
  auto pulled = std::make_shared<std::atomic<int64_t>>(0);
  {
    auto it = counting(-1, pulled)
                  .map([](int64_t x) { return x; }, int64_t{1} << 40)
                  .make_iterator();
    CHECK(*it.get_next() == 0);
    std::this_thread::sleep_for(20ms);
    // 256 slots and the element in hand (it read without end, into memory).
    CHECK(pulled->load() <= 257);
  }
  // Calls queued when the iterator goes are skipped (TF cancels them): all
  // 256 of the window ran, 10 ms each, before destruction returned.
  std::atomic<int64_t> calls{0};
  {
    auto it = iota(800)
                  .map(
                      [&calls](int64_t x) {
                        ++calls;
                        std::this_thread::sleep_for(10ms);
                        return x;
                      },
                      800)
                  .make_iterator();
    CHECK(*it.get_next() == 0);
  }
  // Those running, and those started while element 0 was awaited: about
  // two per pool thread.
  CHECK(calls.load() < 3 * data::detail::inter_op_threads_wanted() + 8);
}

TEST_CASE("errors from worker threads come out in the consumer's thread") {
  auto f = [](int64_t x) {
    if (x == 5) throw tpf::DataLossError("[f] expected x != 5, got 5");
    return x;
  };
  for (int64_t workers : {1, 3}) {
    auto it = iota(8).map(f, workers).prefetch(2).make_iterator();
    for (int64_t i = 0; i < 5; ++i) CHECK(*it.get_next() == i);
    CHECK_THROWS_WITH_AS(it.get_next(), "[f] expected x != 5, got 5",
                         tpf::DataLossError);
    // The pipeline goes on after the failed element.
    CHECK(*it.get_next() == 6);
    CHECK(*it.get_next() == 7);
    CHECK_FALSE(it.get_next().has_value());
    std::vector<int64_t> kept =
        collect(iota(8).map(f, workers).prefetch(3).ignore_errors());
    CHECK(kept == std::vector<int64_t>{0, 1, 2, 3, 4, 6, 7});
  }
  // An error thrown by the upstream of a prefetch (on its thread).
  auto gen = data::from_generator([i = 0]() mutable -> std::optional<int> {
    if (++i == 2) throw tpf::IOError("[gen] expected a file, got none");
    return i < 4 ? std::optional<int>(i) : std::nullopt;
  });
  CHECK(collect(gen.prefetch(4).ignore_errors()) == std::vector<int>{1, 3});
  CHECK_THROWS_AS(collect(gen.prefetch(4)), tpf::IOError);
  CHECK_THROWS_AS(collect(gen.map([](int x) { return x; }, 2)), tpf::IOError);
}

TEST_CASE("prefetch fills its buffer ahead of the consumer") {
  auto pulled = std::make_shared<std::atomic<int64_t>>(0);
  auto it = counting(100, pulled).prefetch(5).make_iterator();
  CHECK(*it.get_next() == 0);
  // One handed out, five buffered, at most one more in the producer's hands.
  for (int i = 0; i < 2000 && pulled->load() < 6; ++i)
    std::this_thread::sleep_for(1ms);
  CHECK(pulled->load() >= 6);
  CHECK(pulled->load() <= 7);
  for (int64_t i = 1; i < 100; ++i) CHECK(*it.get_next() == i);
  CHECK_FALSE(it.get_next().has_value());
}

namespace {

/**
 * Every get_next() of one epoch until the end: "v" and the value, or "e" and
 * the message of what it threw (the iterator goes on after an error).
 */
std::vector<std::string> trace(const data::Dataset<int64_t>& ds) {
  std::vector<std::string> out;
  auto it = ds.make_iterator();
  for (;;) {
    try {
      std::optional<int64_t> x = it.get_next();
      if (!x) return out;
      out.push_back('v' + std::to_string(*x));
    } catch (const tpf::Error& e) {
      out.push_back('e' + std::string(e.what()));
    }
  }
}

/** Sleeps a pseudo-random 0-300 us, so that workers finish out of order. */
void jitter(int64_t seed) {
  std::this_thread::sleep_for(
      std::chrono::microseconds((seed * 7919 + 13) % 301));
}

}  // namespace

TEST_CASE("parallel interleave keeps the sequential order") {
  // tf.data's documented example: Dataset.range(1, 6).interleave(
  //     lambda x: Dataset.from_tensors(x).repeat(6), cycle_length=2,
  //     block_length=4), for each count of threads.
  auto sixes = [](int64_t x) {
    return data::Dataset<int64_t>::from_tensors(x).repeat(6);
  };
  const std::vector<int64_t> documented = {1, 1, 1, 1, 2, 2, 2, 2, 1, 1,
                                           2, 2, 3, 3, 3, 3, 4, 4, 4, 4,
                                           3, 3, 4, 4, 5, 5, 5, 5, 5, 5};
  auto from1 = iota(5).map([](int64_t x) { return x + 1; });
  for (int64_t calls : {int64_t{1}, int64_t{2}, data::kAutotune})
    CHECK(collect(from1.interleave(sixes, 2, 4, calls)) == documented);

  // Inner datasets of 0..6 elements that take their time, many cycle shapes:
  // the same order with and without threads.
  auto slow_inner = [](int64_t x) {
    return data::from_generator([x, i = int64_t{0}]() mutable {
      jitter(x + i);
      return i < x % 7 ? std::optional<int64_t>(x * 100 + i++) : std::nullopt;
    });
  };
  for (int64_t cycle : {1, 3, 5})
    for (int64_t block : {1, 2, 4}) {
      const auto sequential =
          collect(iota(40).interleave(slow_inner, cycle, block));
      // 5 * (0 + 1 + ... + 6) + 0 + 1 + ... + 4
      REQUIRE(sequential.size() == 115);
      for (int64_t calls = 2; calls <= cycle; ++calls)
        CHECK(collect(iota(40).interleave(slow_inner, cycle, block, calls)) ==
              sequential);
    }
  CHECK_THROWS_AS(iota(3).interleave(sixes, 2, 1, 0), tpf::ValueError);
  CHECK_THROWS_WITH_AS(iota(3).interleave(sixes, 2, 1, 3),
                       "[interleave] expected num_parallel_calls in 1..2 "
                       "(cycle_length) or kAutotune, got 3",
                       tpf::ValueError);
}

TEST_CASE("parallel interleave reads inner datasets concurrently") {
  std::atomic<int> running{0}, most{0};
  auto busy_inner = [&](int64_t x) {
    return data::from_generator([&, x, i = 0]() mutable {
      const int now = ++running;
      int seen = most.load();
      while (now > seen && !most.compare_exchange_weak(seen, now)) {
      }
      std::this_thread::sleep_for(1ms);
      --running;
      return i < 4 ? std::optional<int64_t>(x + i++) : std::nullopt;
    });
  };
  CHECK(collect(iota(12).interleave(busy_inner, 4, 1, 4)).size() == 48);
  CHECK(most.load() > 1);
  CHECK(most.load() <= 4);
}

TEST_CASE("parallel interleave: errors come out at their place") {
  // Upstream loses element 2 to an error; f throws for 4; inner 1 throws
  // at its second call, then gives 12. Cycle 2, block 1, by hand:
  // slot 0 opens 0, slot 1 opens 1, 1 errs in its turn and is asked again,
  // both end, slot 1 pulls the error, opens 3, slot 0 gets f's error, then
  // input ends and 3 finishes alone.
  auto input = data::from_generator([i = int64_t{0}]() mutable {
    if (i == 2) {
      ++i;
      throw tpf::DataLossError("[in] lost 2");
    }
    return i < 5 ? std::optional<int64_t>(i++) : std::nullopt;
  });
  auto f = [](int64_t x) {
    if (x == 4) throw tpf::ValueError("[f] no 4");
    return data::from_generator([x, i = int64_t{0}]() mutable {
      jitter(x * 3 + i);
      if (x == 1 && i == 1) {
        ++i;
        throw tpf::IOError("[inner] 1 at 1");
      }
      return i < 3 ? std::optional<int64_t>(x * 10 + i++) : std::nullopt;
    });
  };
  const std::vector<std::string> expected = {
      "v0",        "v10", "v1",           "e[inner] 1 at 1",
      "v12",       "v2",  "e[in] lost 2", "v30",
      "e[f] no 4", "v31", "v32"};
  for (int round = 0; round < 10; ++round) {
    CHECK(trace(input.interleave(f, 2)) == expected);
    CHECK(trace(input.interleave(f, 2, 1, 2)) == expected);
  }
}

TEST_CASE("destroying iterators mid-epoch joins their threads") {
  auto endless = iota(-1);
  // Producer blocked on a full queue; workers blocked on a full window; both
  // stacked; slow calls in flight.
  for (int round = 0; round < 20; ++round) {
    {
      auto it = endless.prefetch(2).make_iterator();
      CHECK(*it.get_next() == 0);
    }
    {
      auto it = endless.map([](int64_t x) { return x; }, 4).make_iterator();
      CHECK(*it.get_next() == 0);
    }
    {
      auto it = endless.map([](int64_t x) { return x + 1; }, 3)
                    .prefetch(1)
                    .map([](int64_t x) { return x; }, 2)
                    .prefetch(3)
                    .make_iterator();
      CHECK(*it.get_next() == 1);
    }
    {
      auto it = endless
                    .map(
                        [](int64_t x) {
                          std::this_thread::sleep_for(1ms);
                          return x;
                        },
                        4)
                    .prefetch(8)
                    .make_iterator();
      it.get_next();
    }
    {
      auto it = endless
                    .interleave([](int64_t x) { return iota(-1).take(x % 5); },
                                3, 2, 3)
                    .make_iterator();
      CHECK(*it.get_next() == 0);
    }
    // Never asked for anything.
    auto unused =
        endless.map([](int64_t x) { return x; }, 2).prefetch(2).make_iterator();
    auto unused_interleave =
        endless.interleave([](int64_t) { return iota(-1); }, 4, 1, 4)
            .make_iterator();
  }
  // A range-for left early.
  int64_t sum = 0;
  for (int64_t x : endless.map([](int64_t x) { return x; }, 2).prefetch(4)) {
    if (x == 10) break;
    sum += x;
  }
  CHECK(sum == 45);
}
