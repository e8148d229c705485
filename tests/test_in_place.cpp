// In-place writes and what a tape saved: a gradient reads the values the op
// saw (TensorFlow's semantics), a tensor that cannot keep them is an error at
// gradient time, overlapping writes read their source whole, and assign keeps
// the variable's dtype and shape. White-box: write_into and buffer versions.
#include <chrono>
#include <future>

#include "core/creation_internal.hpp"
#include "support/check.hpp"

using testing::expect_error;

namespace {

tpf::Tensor t64(std::initializer_list<double> v) {
  return tpf::tensor<double>(v);
}

const tpf::Storage& buffer_of(const tpf::Tensor& t) {
  return *t.impl()->storage;
}

}  // namespace

TEST_CASE("a gradient uses the value the tape recorded, not a later assign") {
  tpf::Variable x(t64({1.0, 2.0}));
  tpf::GradientTape tape;
  const auto y = tpf::sum(x * x);
  x.assign(t64({10.0, 20.0}));
  CHECK_CLOSE(tape.gradient(y, {x})[0], t64({2.0, 4.0}));
  CHECK_CLOSE(x, t64({10.0, 20.0}));
}

TEST_CASE("assign_add and assign_sub between forward and gradient") {
  tpf::Variable x(t64({1.0, 2.0}));
  tpf::GradientTape tape(true);
  const auto y = tpf::sum(x * x * x);
  x.assign_add(t64({1.0, 1.0}));
  CHECK_CLOSE(tape.gradient(y, {x})[0], t64({3.0, 12.0}));
  x.assign_sub(t64({5.0, 5.0}));
  CHECK_CLOSE(tape.gradient(y, {x})[0], t64({3.0, 12.0}));
  CHECK_CLOSE(x, t64({-3.0, -2.0}));
}

TEST_CASE("a persistent tape answers the same after every write") {
  tpf::Variable w(t64({1.0, -2.0}));
  const auto c = t64({3.0, 4.0});
  tpf::GradientTape tape(true);
  const auto y = tpf::sum(tpf::square(w) * c);  // saves w and w^2 * c's inputs
  for (double v : {5.0, 7.0}) {
    w.assign(t64({v, v}));
    CHECK_CLOSE(tape.gradient(y, {w})[0], t64({6.0, -16.0}));
  }
  // Ops recorded after the writes read the new value.
  const auto z = tpf::sum(w * w);
  CHECK_CLOSE(tape.gradient(z, {w})[0], t64({14.0, 14.0}));
}

TEST_CASE("a saved view of a variable keeps the recorded values") {
  tpf::Variable w(tpf::tensor({{1.0, 2.0}, {3.0, 4.0}}));
  tpf::GradientTape tape;
  const auto wt = tpf::transpose(w);
  const auto row = tpf::slice(w, {1, 0}, {1, 2});
  const auto y = tpf::sum(tpf::square(wt)) + tpf::sum(row * row);
  w.assign(tpf::zeros({2, 2}, tpf::float64));
  CHECK_CLOSE(tape.gradient(y, {w})[0],
              tpf::tensor({{2.0, 4.0}, {12.0, 16.0}}));
  // The views are values, as in TensorFlow: the assign did not change them.
  CHECK_CLOSE(wt, tpf::tensor({{1.0, 3.0}, {2.0, 4.0}}));
}

TEST_CASE("a second-order gradient reads the recorded value too") {
  tpf::Variable x(t64({2.0}));
  tpf::GradientTape outer;
  tpf::GradientTape inner;
  const auto y = x * x * x;
  x.assign(t64({100.0}));
  const auto dy = inner.gradient(y, {x})[0];  // 3 x^2 at x = 2
  CHECK_CLOSE(dy, t64({12.0}));
  CHECK_CLOSE(outer.gradient(dy, {x})[0], t64({12.0}));  // 6 x
}

TEST_CASE("a write into a buffer nothing else holds stays in place") {
  tpf::Variable w(t64({1.0, 2.0}));
  const tpf::Storage* before = &buffer_of(w);
  const uint64_t version = before->version();
  w.assign(t64({3.0, 4.0}));
  w.assign_add(t64({1.0, 1.0}));
  CHECK(&buffer_of(w) == before);
  CHECK(buffer_of(w).version() == version + 2);
  {
    tpf::GradientTape tape;
    const auto y = tpf::sum(w * w);
    w.assign(t64({0.0, 0.0}));  // the tape holds the old buffer: w moves
    CHECK(&buffer_of(w) != before);
  }
}

TEST_CASE("a tensor written in place after a tape saved it is an error") {
  const auto x = t64({1.0, 2.0});
  tpf::GradientTape tape;
  tape.watch(x);
  const auto y = tpf::sum(x * x);
  tpf::write_into(x, t64({5.0, 6.0}), "test");  // not a Variable: cannot move
  expect_error<tpf::ValueError>([&] { tape.gradient(y, {x}); }, "[mul]");
  try {
    tpf::GradientTape again;
    again.watch(x);
    const auto z = tpf::square(x);
    tpf::write_into(x, t64({0.0, 0.0}), "test");
    again.gradient(z, {x});
    FAIL("expected an error");
  } catch (const tpf::ValueError& e) {
    CHECK(std::string(e.what()).find("in-place") != std::string::npos);
  }
}

TEST_CASE("assign from a view of the variable itself reads it whole first") {
  tpf::Variable v(tpf::tensor({{1.0, 2.0}, {3.0, 4.0}}));
  v.assign(tpf::transpose(v));
  CHECK_CLOSE(v, tpf::tensor({{1.0, 3.0}, {2.0, 4.0}}));
  v.assign(v);
  CHECK_CLOSE(v, tpf::tensor({{1.0, 3.0}, {2.0, 4.0}}));
}

TEST_CASE("overlapping views of one buffer: the source is read whole first") {
  const auto t = t64({1.0, 2.0, 3.0, 4.0, 5.0});
  tpf::write_into(tpf::slice(t, {1}, {4}), tpf::slice(t, {0}, {4}), "test");
  CHECK_CLOSE(t, t64({1.0, 1.0, 2.0, 3.0, 4.0}));
  tpf::write_into(tpf::slice(t, {0}, {4}), tpf::slice(t, {1}, {4}), "test");
  CHECK_CLOSE(t, t64({1.0, 2.0, 3.0, 4.0, 4.0}));
  const auto m = tpf::tensor({{1.0, 2.0}, {3.0, 4.0}});
  tpf::write_into(m, tpf::transpose(m), "test");
  CHECK_CLOSE(m, tpf::tensor({{1.0, 3.0}, {2.0, 4.0}}));
}

TEST_CASE("assign keeps the variable's dtype and shape") {
  tpf::Variable v(tpf::tensor({1.0f, 2.0f}));
  expect_error<tpf::DTypeError>(
      [&] {
        v.assign(t64({1.0, 2.0}));
      },
      "[assign] expected a value of dtype float32");
  expect_error<tpf::DTypeError>(
      [&] {
        v.assign_add(t64({1.0, 2.0}));
      },
      "[assign_add] expected a delta of dtype");
  expect_error<tpf::DTypeError>(
      [&] {
        v.assign_sub(tpf::tensor<int32_t>({1, 2}));
      },
      "[assign_sub] expected a delta of dtype float32");
  expect_error<tpf::ShapeError>(
      [&] {
        v.assign(tpf::tensor({1.0f, 2.0f, 3.0f}));
      },
      "[assign] expected a value of shape (2,)");
  try {
    v.assign(tpf::zeros({2, 1}));
    FAIL("expected a ShapeError");
  } catch (const tpf::ShapeError& e) {
    CHECK(std::string(e.what()).find("(2, 1)") != std::string::npos);
  }
  expect_error<tpf::ValueError>([&] { v.assign(tpf::Tensor()); }, "[assign]");
  CHECK_CLOSE(v, tpf::tensor({1.0f, 2.0f}));
}

TEST_CASE("a snapshot waits for the write under way, and later writes move") {
  tpf::Variable v(t64({1.0, 2.0}));
  CHECK(buffer_of(v).writers() == 0);
  std::future<tpf::Tensor> taken;
  {
    const tpf::Tensor target = tpf::begin_in_place_write(v, false, "test");
    CHECK(buffer_of(v).writers() == 1);
    taken = std::async(std::launch::async, [&] { return tpf::snapshot(v); });
    // The snapshot cannot read while the write is under way.
    CHECK(taken.wait_for(std::chrono::milliseconds(50)) ==
          std::future_status::timeout);
    auto* data = static_cast<double*>(target.raw_data());
    data[0] = 5.0;
    data[1] = 6.0;
  }
  const tpf::Tensor snap = taken.get();
  CHECK(buffer_of(v).writers() == 0);
  CHECK_FALSE(snap.impl()->variable);
  CHECK_CLOSE(snap, t64({5.0, 6.0}));
  // The snapshot holds the buffer: the next write moves v to a fresh one.
  v.assign(t64({7.0, 8.0}));
  CHECK(&buffer_of(v) != &buffer_of(snap));
  CHECK_CLOSE(snap, t64({5.0, 6.0}));
  CHECK_CLOSE(v, t64({7.0, 8.0}));
  // Refused writes leave no write counted.
  CHECK_THROWS_AS(v.assign(t64({1.0})), tpf::ShapeError);
  CHECK_THROWS_AS(v.assign_add(tpf::ones({2}, tpf::float32)), tpf::DTypeError);
  CHECK(buffer_of(v).writers() == 0);
}
