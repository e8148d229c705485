// Collectives at whatever size mpirun gave (CI: 1, 2 and 3 ranks; 3 is not a
// power of two). Every rank can compute every rank's input, so each checks
// its result against a serial answer made here.
#include <unistd.h>

#include <cmath>
#include <cstring>

#include "support/check.hpp"
#include "tapeflow/dist.hpp"

namespace dist = tpf::dist;

namespace {

constexpr tpf::DType kDTypes[] = {tpf::bool_, tpf::int32, tpf::int64,
                                  tpf::float32, tpf::float64};
constexpr dist::ReduceOp kOps[] = {dist::ReduceOp::sum, dist::ReduceOp::mean,
                                   dist::ReduceOp::max, dist::ReduceOp::min};

/**
 * Rank r's input: values every rank can make. Floats are not exact sums.
 * Not inlined: GCC contracts a * b + c into an FMA in some inlined copies and
 * not in others (C++ defaults to -ffp-contract=fast), and every caller must
 * see the same bits.
 */
[[gnu::noinline]] double value(int r, int64_t i, tpf::DType dt) {
  if (dt == tpf::bool_) return (i + r) % 3 == 0;
  if (tpf::is_integral(dt)) return ((i * 7 + r * 13) % 23) - 11;
  return std::sin(0.37 * i + 1.1 * r) * 1e3 + 0.1 * r;
}

tpf::Tensor input(int r, int64_t n, tpf::DType dt) {
  std::vector<double> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = value(r, i, dt);
  return tpf::from_vector(v, {n}).cast(dt);
}

/** The serial answer: a left fold over ranks in the dtype, then mean. */
template <class T>
std::vector<T> serial(int ranks, int64_t n, tpf::DType dt, dist::ReduceOp op) {
  std::vector<T> acc = input(0, n, dt).to_vector<T>();
  for (int r = 1; r < ranks; ++r) {
    const std::vector<T> x = input(r, n, dt).to_vector<T>();
    for (int64_t i = 0; i < n; ++i) {
      if (op == dist::ReduceOp::max)
        acc[i] = std::max(acc[i], x[i]);
      else if (op == dist::ReduceOp::min)
        acc[i] = std::min(acc[i], x[i]);
      else if constexpr (std::is_same_v<T, uint8_t>)
        acc[i] = acc[i] | x[i];
      else
        acc[i] = acc[i] + x[i];
    }
  }
  if (op == dist::ReduceOp::mean && ranks > 1)
    for (auto& a : acc) {
      if constexpr (std::is_floating_point_v<T>)
        a = a * (T(1) / T(ranks));
      else if constexpr (!std::is_same_v<T, uint8_t>)
        a = static_cast<T>(a / ranks);
    }
  return acc;
}

/** Bitwise comparison of a result with the serial fold. */
template <class T>
bool bitwise_equal(const tpf::Tensor& t, const std::vector<T>& want) {
  const std::vector<T> got = t.to_vector<T>();
  if (got.size() != want.size()) return false;
  return got.empty() ||
         std::memcmp(got.data(), want.data(), got.size() * sizeof(T)) == 0;
}

bool matches(const tpf::Tensor& t, int ranks, dist::ReduceOp op, bool exact) {
  const int64_t n = t.numel();
  switch (t.dtype()) {
    case tpf::DType::bool_:
      return bitwise_equal(t, serial<uint8_t>(ranks, n, t.dtype(), op));
    case tpf::DType::int32:
      return bitwise_equal(t, serial<int32_t>(ranks, n, t.dtype(), op));
    case tpf::DType::int64:
      return bitwise_equal(t, serial<int64_t>(ranks, n, t.dtype(), op));
    case tpf::DType::float32:
      if (exact)
        return bitwise_equal(t, serial<float>(ranks, n, t.dtype(), op));
      break;
    case tpf::DType::float64:
      if (exact)
        return bitwise_equal(t, serial<double>(ranks, n, t.dtype(), op));
      break;
    case tpf::DType::string_:  // collectives refuse strings before this
      return false;
  }
  const auto want =
      tpf::from_vector(serial<double>(ranks, n, tpf::float64, op), {n});
  return testing::mismatch(
             t.cast(tpf::float64),
             want.cast(tpf::float64).cast(t.dtype()).cast(tpf::float64), 1e-5,
             1e-3)
      .empty();
}

}  // namespace

TEST_CASE("the world matches what mpirun started") {
  auto& w = dist::world();
  const char* size = std::getenv("OMPI_COMM_WORLD_SIZE");
  CHECK(w.size() == (size ? std::atoi(size) : 1));
  CHECK(w.rank() >= 0);
  CHECK(w.rank() < w.size());
  CHECK(w.local_size() == w.size());  // one machine in CI
  CHECK(w.local_rank() == w.rank());
}

TEST_CASE(
    "all_reduce: every dtype, op and order; canonical is the serial fold") {
  auto& w = dist::world();
  for (tpf::DType dt : kDTypes)
    for (dist::ReduceOp op : kOps)
      for (dist::Order order : {dist::Order::fast, dist::Order::canonical})
        for (int64_t n : {0, 1, 2, 7, 1001}) {
          CAPTURE(tpf::dtype_name(dt));
          CAPTURE(static_cast<int>(op));
          CAPTURE(static_cast<int>(order));
          CAPTURE(n);
          if (dt == tpf::bool_ && op == dist::ReduceOp::mean) {
            CHECK_THROWS_AS(w.all_reduce(input(w.rank(), n, dt), op, order),
                            tpf::DTypeError);
            continue;
          }
          const auto t = input(w.rank(), n, dt);
          w.all_reduce(t, op, order);
          CHECK(matches(t, w.size(), op, order == dist::Order::canonical));
        }
}

TEST_CASE(
    "all_reduce writes through strided views and reports async progress") {
  auto& w = dist::world();
  const auto base = tpf::reshape(input(w.rank(), 12, tpf::float64), {3, 4});
  const auto view = tpf::transpose(base, {1, 0});  // not contiguous
  w.all_reduce(view, dist::ReduceOp::sum, dist::Order::canonical);
  CHECK(matches(tpf::reshape(base, {12}), w.size(), dist::ReduceOp::sum, true));

  std::vector<tpf::Tensor> ts;
  std::vector<dist::Work> works;
  for (int k = 0; k < 4; ++k) {
    ts.push_back(input(w.rank(), 100 + k, tpf::float32));
    works.push_back(w.all_reduce_async(ts.back(), dist::ReduceOp::mean,
                                       dist::Order::canonical));
  }
  while (!works[0].test()) {
  }
  for (size_t k = 0; k < works.size(); ++k) {
    works[k].wait();
    works[k].wait();  // a second wait is free
    CHECK(works[k].result().is_same(ts[k]));
    CHECK(matches(ts[k], w.size(), dist::ReduceOp::mean, true));
  }
}

TEST_CASE("collectives started while others are in flight pair up in order") {
  // A canonical all_reduce starts its allgather when its alltoall is done,
  // at a moment that differs by rank; rank-dependent test() calls and
  // blocking collectives in between must not reorder what MPI sees.
  auto& w = dist::world();
  for (int round = 0; round < 20; ++round) {
    const auto a = input(w.rank(), 1000 + round, tpf::float64);
    const auto b = input(w.rank(), 7, tpf::int32);
    const auto c = input(w.rank(), 33, tpf::float32);
    auto first =
        w.all_reduce_async(a, dist::ReduceOp::sum, dist::Order::canonical);
    if (w.rank() == round % w.size())
      for (int spin = 0; spin < 100; ++spin) first.test();
    auto second =
        w.all_reduce_async(b, dist::ReduceOp::max, dist::Order::canonical);
    w.all_reduce(c, dist::ReduceOp::mean, dist::Order::canonical);
    second.wait();
    first.wait();
    CHECK(matches(a, w.size(), dist::ReduceOp::sum, true));
    CHECK(matches(b, w.size(), dist::ReduceOp::max, true));
    CHECK(matches(c, w.size(), dist::ReduceOp::mean, true));
  }
}

TEST_CASE("broadcast, all_gather and reduce_scatter") {
  auto& w = dist::world();
  const int n = w.size();
  for (int root = 0; root < n; ++root) {
    const auto t = input(w.rank(), 9, tpf::int64);
    w.broadcast(t, root);
    CHECK(t.to_vector<int64_t>() ==
          input(root, 9, tpf::int64).to_vector<int64_t>());
  }
  const auto mine = tpf::reshape(input(w.rank(), 6, tpf::float32), {2, 3});
  const auto all = w.all_gather(mine);
  CHECK(all.shape() == tpf::Shape{2 * n, 3});
  for (int r = 0; r < n; ++r)
    CHECK_CLOSE(tpf::slice(all, {2 * r, 0}, {2, 3}),
                tpf::reshape(input(r, 6, tpf::float32), {2, 3}), 0.0, 0.0);
  CHECK(w.all_gather(tpf::scalar(3.0)).shape() == tpf::Shape{n});

  for (dist::Order order : {dist::Order::fast, dist::Order::canonical}) {
    const auto t =
        tpf::reshape(input(w.rank(), 4 * n, tpf::float64), {2 * n, 2});
    const auto part = w.reduce_scatter(t, dist::ReduceOp::sum, order);
    CHECK(part.shape() == tpf::Shape{2, 2});
    const std::vector<double> full =
        serial<double>(n, 4 * n, tpf::float64, dist::ReduceOp::sum);
    const std::vector<double> want(full.begin() + 4 * w.rank(),
                                   full.begin() + 4 * w.rank() + 4);
    auto async = w.reduce_scatter_async(t, dist::ReduceOp::sum, order);
    CHECK(bitwise_equal(async.result(), part.to_vector<double>()));
    if (order == dist::Order::canonical)
      CHECK(bitwise_equal(part, want));
    else
      CHECK_CLOSE(part, tpf::from_vector(want, {2, 2}), 1e-12, 1e-9);
  }
  CHECK_THROWS_AS(w.reduce_scatter(tpf::scalar(1.0)), tpf::ShapeError);
  if (n > 1)
    testing::expect_error<tpf::ShapeError>(
        [&] { w.reduce_scatter(tpf::zeros({2 * n + 1})); },
        "[reduce_scatter] expected dimension 0 to be a multiple of ");
  w.barrier();
}

TEST_CASE("send and recv around a ring; a size mismatch names both sizes") {
  auto& w = dist::world();
  const int n = w.size();
  CHECK_THROWS_AS(w.send(tpf::zeros({1}), w.rank()), tpf::ValueError);
  CHECK_THROWS_AS(w.recv(tpf::zeros({1}), n), tpf::ValueError);
  CHECK_THROWS_AS(w.broadcast(tpf::zeros({1}), -1), tpf::ValueError);
  if (n == 1) return;
  const int next = (w.rank() + 1) % n, prev = (w.rank() + n - 1) % n;
  const auto out = input(w.rank(), 5, tpf::int32);
  const auto in = tpf::zeros({5}, tpf::int32);
  if (w.rank() % 2 == 0) {
    w.send(out, next, 7);
    w.recv(in, prev, 7);
  } else {
    w.recv(in, prev, 7);
    w.send(out, next, 7);
  }
  CHECK(in.to_vector<int32_t>() ==
        input(prev, 5, tpf::int32).to_vector<int32_t>());

  // The nonblocking twins: both directions posted at once, any order.
  const auto in2 = tpf::zeros({5}, tpf::int32);
  auto receiving = w.recv_async(in2, prev, 8);
  auto sending = w.send_async(out, next, 8);
  sending.wait();
  CHECK(receiving.result().is_same(in2));
  CHECK(in2.to_vector<int32_t>() ==
        input(prev, 5, tpf::int32).to_vector<int32_t>());
  w.barrier_async().wait();

  if (w.rank() == 0) w.send(tpf::zeros({3}), 1, 9);
  if (w.rank() == 1)
    testing::expect_error<dist::DistError>(
        [&] { w.recv(tpf::zeros({4}), 0, 9); },
        "[recv] expected 16 bytes (4 float32) from rank 0 "
        "(tag 9), got 12");
  // recv_async into a shorter tensor, after a message already came on the
  // pair: Open MPI's truncation error never came (the wait hung).
  if (w.rank() == 0) {
    w.send(tpf::ones({4}), 1, 11);
    w.send(tpf::ones({4}), 1, 11);
  }
  if (w.rank() == 1) {
    usleep(200000);  // both messages arrive before the receives
    w.recv(tpf::zeros({4}), 0, 11);
    auto shorter = w.recv_async(tpf::zeros({3}), 0, 11);
    testing::expect_error<dist::DistError>(
        [&] { shorter.wait(); },
        "[recv] expected 12 bytes (3 float32) from rank 0 (tag 11), got 16");
  }
  // Into a broadcast view (elements sharing memory): refused, the message
  // received all the same, so that the sender and the next messages go on.
  if (w.rank() == 0) w.send(tpf::ones({3}), 1, 10);
  if (w.rank() == 1)
    testing::expect_error<tpf::ValueError>(
        [&] { w.recv(tpf::broadcast_to(tpf::zeros({1}), {3}), 0, 10); },
        "[recv] expected a tensor whose elements have memory of their own");
  w.barrier();
}

TEST_CASE("collectives refuse to write into a broadcast view, on every rank") {
  auto& w = dist::world();
  const auto shared = tpf::broadcast_to(tpf::zeros({1}), {3});
  testing::expect_error<tpf::ValueError>(
      [&] { w.broadcast(shared, 0); },
      "[broadcast] expected a tensor whose elements have memory of their own, "
      "got a broadcast view of shape (3,)");
  testing::expect_error<tpf::ValueError>(
      [&] { w.all_reduce(shared); },
      "[all_reduce] expected a tensor whose elements have memory of their "
      "own");
  // Nothing was left half done: the world still works.
  const auto t = tpf::ones({3});
  w.all_reduce(t);
  CHECK(t.to_vector<float>() == std::vector<float>(3, float(w.size())));
}

TEST_CASE("split: groups by color, ordered by key") {
  auto& w = dist::world();
  auto half = w.split(w.rank() % 2, -w.rank());
  const int same_color = (w.size() - w.rank() % 2 + 1) / 2;
  CHECK(half.size() == same_color);
  CHECK(half.rank() == same_color - 1 - w.rank() / 2);  // key reverses order
  const auto t = tpf::full({1}, 1.0, tpf::int32);
  half.all_reduce(t);
  CHECK(t.item<int32_t>() == same_color);
  CHECK_THROWS_AS(w.split(-1), tpf::ValueError);
}

TEST_CASE("TAPEFLOW_DIST_DEBUG=1: mismatched arguments name the rank") {
  auto& w = dist::world();
  const char* debug = std::getenv("TAPEFLOW_DIST_DEBUG");
  if (debug == nullptr || std::string(debug) != "1" || w.size() == 1) return;
  const int64_t n = w.rank() == 1 ? 5 : 6;
  testing::expect_error<dist::DistError>(
      [&] { w.all_reduce(tpf::zeros({n})); },
      "[all_reduce] expected 6 elements on every rank, rank "
      "1 has 5");
  testing::expect_error<dist::DistError>(
      [&] { w.broadcast(tpf::zeros({2}), w.rank() == 1 ? 1 : 0); },
      "[broadcast] expected root 0 on every rank, rank 1 has 1");
  testing::expect_error<dist::DistError>(
      [&] {
        w.all_reduce(
            tpf::zeros({2}, w.rank() == 1 ? tpf::int32 : tpf::float32));
      },
      "[all_reduce] expected dtype float32 on every rank, rank 1 has int32");
  // The same element count in another shape: TF and Horovod refuse it too.
  const auto transposed = [&] {
    return w.rank() == 1 ? tpf::zeros({3, 2}) : tpf::zeros({2, 3});
  };
  testing::expect_error<dist::DistError>(
      [&] { w.all_reduce(transposed()); },
      "[all_reduce] expected shape (2, 3) on every rank, rank 1 has (3, 2)");
  testing::expect_error<dist::DistError>(
      [&] { w.all_gather(transposed()); },
      "[all_gather] expected shape (2, 3) on every rank, rank 1 has (3, 2)");
  testing::expect_error<dist::DistError>(
      [&] { w.broadcast(transposed(), 0); },
      "[broadcast] expected shape (2, 3) on every rank, rank 1 has (3, 2)");
  w.all_reduce(tpf::zeros({2, 3}));  // the ranks still pair afterwards
}
