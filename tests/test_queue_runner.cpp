// train::Coordinator and train::QueueRunner over tpf::data's queues: stop
// requests, errors from threads rethrown by join, no hang when producers
// are blocked on a full queue or consumers on an empty one. Header-only, so
// the same file also builds as the ThreadSanitizer test (queue_runner_tsan).
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <set>
#include <string>
#include <thread>

#include "tapeflow/data/queue.hpp"
#include "tapeflow/data/queue_runner.hpp"

namespace data = tapeflow::data;
namespace train = tapeflow::train;
namespace tpf = tapeflow;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

namespace {

/** Seconds since `start`. */
double since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

/** Dequeues until the queue's end; the elements in order. */
std::vector<int> drain(data::FIFOQueue<int>& q) {
  std::vector<int> out;
  while (auto v = q.dequeue_or_end()) out.push_back(*v);
  return out;
}

}  // namespace

TEST_CASE("Coordinator: stop requests, the first error, clean stops") {
  train::Coordinator coord;
  CHECK_FALSE(coord.should_stop());
  CHECK_FALSE(coord.wait_for_stop(10ms));
  coord.request_stop(std::make_exception_ptr(tpf::ValueError("[a] first")));
  coord.request_stop(std::make_exception_ptr(tpf::IOError("[b] second")));
  CHECK(coord.should_stop());
  CHECK(coord.wait_for_stop(0ms));
  CHECK_THROWS_WITH_AS(coord.raise_requested_exception(), "[a] first",
                       tpf::ValueError);

  coord.clear_stop();
  CHECK_FALSE(coord.should_stop());
  CHECK_NOTHROW(coord.raise_requested_exception());
  // The end of the input stops cleanly: no error to rethrow.
  coord.stop_on_exception(
      [] { throw tpf::OutOfRangeError("[reader] end of input"); });
  CHECK(coord.should_stop());
  CHECK_NOTHROW(coord.raise_requested_exception());

  coord.clear_stop();
  coord.stop_on_exception([] { throw std::runtime_error("boom"); });
  CHECK(coord.should_stop());
  CHECK_THROWS_WITH_AS(coord.raise_requested_exception(), "boom",
                       std::runtime_error);
}

TEST_CASE("Coordinator: stop callbacks run once, or at once when stopped") {
  train::Coordinator coord;
  int calls = 0, removed_calls = 0;
  coord.add_stop_callback([&] { ++calls; });
  const uint64_t id = coord.add_stop_callback([&] { ++removed_calls; });
  coord.remove_stop_callback(id);
  coord.request_stop();
  coord.request_stop();
  CHECK(calls == 1);
  CHECK(removed_calls == 0);
  coord.add_stop_callback([&] { ++calls; });
  CHECK(calls == 2);
}

TEST_CASE("join rethrows an error from a thread after the others stop") {
  train::Coordinator coord;
  std::atomic<int> loops{0};
  std::vector<train::CoordinatedThread> threads;
  for (int i = 0; i < 3; ++i)
    threads.push_back(coord.make_thread([&] {
      while (!coord.should_stop()) {
        ++loops;
        std::this_thread::sleep_for(1ms);
      }
    }));
  threads.push_back(coord.make_thread([] {
    std::this_thread::sleep_for(20ms);
    throw tpf::DataLossError("[reader] bad record 7");
  }));
  CHECK_THROWS_WITH_AS(coord.join(threads, 10s), "[reader] bad record 7",
                       tpf::DataLossError);
  CHECK(coord.should_stop());
  CHECK(loops.load() > 0);
}

TEST_CASE("join gives up on threads that ignore the stop") {
  train::Coordinator coord;
  auto release = std::make_shared<std::atomic<bool>>(false);
  std::vector<train::CoordinatedThread> threads;
  threads.push_back(coord.make_thread([release] {
    while (!release->load()) std::this_thread::sleep_for(1ms);
  }));
  threads.push_back(coord.make_thread([] {}));
  coord.request_stop();
  const auto start = Clock::now();
  CHECK_THROWS_WITH_AS(coord.join(threads, 50ms),
                       doctest::Contains("got 1 of 2 still running"),
                       train::ThreadsStillRunningError);
  CHECK(since(start) < 5.0);
  release->store(true);  // the detached thread ends on its own
}

TEST_CASE("threads destroyed unstarted leave no stop callback behind") {
  // The callback closed the queue at the next stop request, however long
  // after the threads were gone: a queue destroyed with them meant a close
  // on freed memory.
  data::FIFOQueue<int> q(4);
  train::Coordinator coord;
  {
    train::QueueRunner<data::FIFOQueue<int>> runner(q,
                                                    {[&q] { q.enqueue(1); }});
    auto threads = runner.create_threads(coord, /*start=*/false);
    REQUIRE(threads.size() == 1);
  }
  coord.request_stop();
  CHECK_FALSE(q.is_closed());
}

TEST_CASE("QueueRunner feeds a queue until the coordinator stops it") {
  // Three producers of distinct numbers into a queue of 2: they block on it
  // most of the time, and still end promptly on the stop request.
  data::FIFOQueue<int> q(2);
  std::atomic<int> next{0};
  auto produce = [&] { q.enqueue(next++); };
  train::QueueRunner<data::FIFOQueue<int>> runner(q,
                                                  {produce, produce, produce});
  train::Coordinator coord;
  auto threads = runner.create_threads(coord);
  REQUIRE(threads.size() == 3);
  std::set<int> seen;
  for (int i = 0; i < 100; ++i) seen.insert(q.dequeue());
  CHECK(seen.size() == 100);  // no element twice
  coord.request_stop();
  const auto start = Clock::now();
  coord.join(threads, 10s);
  CHECK(since(start) < 5.0);
  CHECK(q.is_closed());
  // What was enqueued before the stop can still be taken, then the end.
  for (int v : drain(q)) CHECK(seen.insert(v).second);
}

TEST_CASE("an enqueue error reaches join and unblocks the consumer") {
  data::FIFOQueue<int> q(4);
  std::atomic<int> calls{0};
  auto good = [&] { q.enqueue(1); };
  auto failing = [&] {
    if (++calls == 5)
      throw tpf::IOError("[read_file] expected a file, got none");
    q.enqueue(2);
  };
  train::QueueRunner<data::FIFOQueue<int>> runner(q, {good, failing});
  train::Coordinator coord;
  auto threads = runner.create_threads(coord);
  // The consumer reads until the end; the error closes the queue, so this
  // ends rather than waiting for elements that never come.
  const auto start = Clock::now();
  const auto got = drain(q);
  CHECK(since(start) < 5.0);
  CHECK(got.size() >= 4);
  CHECK_THROWS_WITH_AS(coord.join(threads, 10s),
                       "[read_file] expected a file, got none", tpf::IOError);
}

TEST_CASE("producers whose input ends close the queue; nothing is lost") {
  data::FIFOQueue<int> q(3);
  auto counter = [&](int begin, int end) {
    return [&q, i = begin, end]() mutable {
      if (i == end) throw tpf::OutOfRangeError("[reader] end of input");
      q.enqueue(i++);
    };
  };
  train::QueueRunner<data::FIFOQueue<int>> runner(
      q, {counter(0, 50), counter(50, 80), counter(80, 200)});
  train::Coordinator coord;
  auto threads = runner.create_threads(coord, /*start=*/false);
  CHECK(q.size() == 0);
  for (auto& t : threads) t.start();
  CHECK_THROWS_AS(threads[0].start(), tpf::ValueError);
  auto got = drain(q);  // ends when the last producer closes the queue
  std::sort(got.begin(), got.end());
  std::vector<int> all(200);
  for (int i = 0; i < 200; ++i) all[i] = i;
  CHECK(got == all);
  coord.join(threads, 10s);  // all ended: no stop request needed
  CHECK_FALSE(coord.should_stop());
}

TEST_CASE("a stop while the queue is full and nobody consumes never hangs") {
  data::FIFOQueue<int> q(1);
  train::QueueRunner<data::FIFOQueue<int>> runner(
      q, {[&] { q.enqueue(0); }, [&] { q.enqueue(1); }});
  {
    train::Coordinator coord;
    auto threads = runner.create_threads(coord);
    while (q.size() < 1) std::this_thread::sleep_for(1ms);
    std::this_thread::sleep_for(10ms);  // both producers now wait for space
    coord.request_stop();
    const auto start = Clock::now();
    coord.join(threads, 10s);
    CHECK(since(start) < 5.0);
  }
  {
    // Threads never joined: destroying them stops and joins them.
    data::FIFOQueue<int> q2(1);
    train::QueueRunner<data::FIFOQueue<int>> runner2(q2,
                                                     {[&] { q2.enqueue(0); }});
    train::Coordinator coord;
    const auto start = Clock::now();
    {
      auto threads = runner2.create_threads(coord);
      std::this_thread::sleep_for(10ms);
    }
    CHECK(since(start) < 5.0);
    CHECK(coord.should_stop());
  }
  CHECK_THROWS_AS((train::QueueRunner<data::FIFOQueue<int>>(q, {})),
                  tpf::ValueError);
}
