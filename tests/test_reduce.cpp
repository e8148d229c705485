// Reductions over any axes, keepdims, arg-reductions, the parallel paths
// and their gradients; count_nonzero, any and all over every layout; cumsum
// and the composites logsumexp, variance, stddev.
#include <array>
#include <random>

#include "support/check.hpp"
#include "support/device.hpp"

using testing::OpCase;
using Ts = std::vector<tpf::Tensor>;

namespace {
tpf::Tensor x23() {
  return tpf::tensor({{0.5, -1.25, 2.0}, {1.5, 0.25, -0.75}});
}

/** Float64 uniform in [lo, hi) that leaves the global stream as it is. */
tpf::Tensor stateless64(const tpf::Shape& shape, uint64_t seed, double lo,
                        double hi) {
  return tpf::stateless_random_uniform(shape, seed, lo, hi, tpf::float64);
}

/**
 * Host reference: x (A, B, C) reduced over axis 1 (keep 0 and 2: `mid`) or
 * over axes 0 and 2 (keep 1), combining with `f` from `init`.
 */
tpf::Tensor reduce3(const tpf::Tensor& x, bool mid, double init,
                    double (*f)(double, double)) {
  const int64_t A = x.shape()[0], B = x.shape()[1], C = x.shape()[2];
  const auto v = x.to_vector<double>();
  std::vector<double> out(mid ? A * C : B, init);
  for (int64_t a = 0; a < A; ++a)
    for (int64_t b = 0; b < B; ++b)
      for (int64_t c = 0; c < C; ++c) {
        double& o = out[mid ? a * C + c : b];
        o = f(o, v[(a * B + b) * C + c]);
      }
  return mid ? tpf::from_vector(out, {A, C}) : tpf::from_vector(out, {B});
}
}  // namespace

TEST_CASE("reductions: forward, strided, float32 and gradcheck") {
  const tpf::Tensor x = x23();
  const std::vector<OpCase> cases = {
      {"sum_all",
       [](const Ts& in) { return tpf::sum(in[0]); },
       {x},
       tpf::scalar(2.25, tpf::float64)},
      {"sum_axis0",
       [](const Ts& in) { return tpf::sum(in[0], {0}); },
       {x},
       tpf::tensor({2.0, -1.0, 1.25})},
      {"sum_axis1_keep",
       [](const Ts& in) { return tpf::sum(in[0], {-1}, true); },
       {x},
       tpf::tensor({{1.25}, {1.0}})},
      {"mean_axis1",
       [](const Ts& in) { return tpf::mean(in[0], {1}); },
       {x},
       tpf::tensor({1.25 / 3, 1.0 / 3})},
      {"max_axis0",
       [](const Ts& in) { return tpf::max(in[0], {0}); },
       {x},
       tpf::tensor({1.5, 0.25, 2.0})},
      {"min_axis1",
       [](const Ts& in) { return tpf::min(in[0], {1}); },
       {x},
       tpf::tensor({-1.25, -0.75})},
      {"prod_axis1",
       [](const Ts& in) { return tpf::prod(in[0], {1}); },
       {x},
       tpf::tensor({0.5 * -1.25 * 2.0, 1.5 * 0.25 * -0.75})},
  };
  for (const auto& c : cases) testing::run_op_case(c);
}

TEST_CASE("reductions of a 3-D tensor and of long rows: OpCase rows") {
  const auto x = stateless64({3, 4, 50}, 1, -1.0, 1.0);
  const auto near1 = stateless64({3, 4, 50}, 2, 0.9, 1.1);
  // Rows of >= 2048: the CUDA reduction's two-pass path.
  const auto rows = stateless64({2, 2100}, 3, 0.0, 1.0);
  auto add = [](double a, double b) { return a + b; };
  auto mul = [](double a, double b) { return a * b; };
  const auto hi = reduce3(x, true, -1e300,
                          [](double a, double b) { return std::max(a, b); });
  const auto lo = reduce3(x, true, 1e300,
                          [](double a, double b) { return std::min(a, b); });
  const std::vector<OpCase> cases = {
      {"sum_axes02_3d",
       [](const Ts& in) {
         return tpf::sum(in[0], {0, 2});
       },
       {x},
       reduce3(x, false, 0.0, add)},
      {"max_minus_min_axis1_3d",
       [](const Ts& in) { return tpf::max(in[0], {1}) - tpf::min(in[0], {1}); },
       {x},
       hi - lo},
      {"prod_axis1_3d",
       [](const Ts& in) { return tpf::prod(in[0], {1}); },
       {near1},
       reduce3(near1, true, 1.0, mul)},
      {"sum_long_rows",
       [](const Ts& in) { return tpf::sum(in[0], {1}); },
       {rows},
       reduce3(tpf::reshape(rows, {1, 2, 2100}), false, 0.0, add)},
  };
  for (const auto& c : cases) testing::run_op_case(c);
}

TEST_CASE("reductions over middle and several axes of a 3-D tensor") {
  const auto x =
      tpf::reshape(tpf::arange(0.0, 24.0, 1.0, tpf::float64), {2, 3, 4});
  CHECK_CLOSE(tpf::sum(x, {1}), tpf::tensor({{12.0, 15.0, 18.0, 21.0},
                                             {48.0, 51.0, 54.0, 57.0}}));
  CHECK_CLOSE(tpf::sum(x, {0, 2}), tpf::tensor({60.0, 92.0, 124.0}));
  CHECK_CLOSE(tpf::max(x, {0, 1}), tpf::tensor({20.0, 21.0, 22.0, 23.0}));
  const auto why = testing::gradcheck(
      [](const Ts& in) {
        return tpf::sum(in[0] * in[0], {0, 2});
      },
      {testing::uniform64({2, 3, 4})});
  CHECK_MESSAGE(why.empty(), why);
}

TEST_CASE("large reductions take the parallel paths and agree") {
  const auto ones = tpf::ones({1 << 20});
  CHECK(tpf::sum(ones).item<double>() == doctest::Approx(1 << 20));
  const auto x = tpf::random_uniform({1000, 300}, 0.0, 1.0, tpf::float64);
  const auto v = x.to_vector<double>();
  std::vector<double> cols(300, 0.0), rows(1000, 0.0);
  for (int i = 0; i < 1000; ++i)
    for (int j = 0; j < 300; ++j) {
      cols[j] += v[i * 300 + j];
      rows[i] += v[i * 300 + j];
    }
  CHECK_CLOSE(tpf::sum(x, {0}), tpf::from_vector(cols, {300}), 1e-12, 1e-9);
  CHECK_CLOSE(tpf::sum(x, {1}), tpf::from_vector(rows, {1000}), 1e-12, 1e-9);
  CHECK_CLOSE(tpf::sum(tpf::transpose(x), {1}), tpf::from_vector(cols, {300}),
              1e-12, 1e-9);
}

TEST_CASE("max gradient is shared among ties; prod gradient survives zeros") {
  const auto x = tpf::tensor({1.0, 3.0, 3.0});
  tpf::GradientTape tape(true);
  tape.watch(x);
  CHECK_CLOSE(tape.gradient(tpf::max(x), {x})[0], tpf::tensor({0.0, 0.5, 0.5}));
  const auto z = tpf::tensor({2.0, 0.0, 4.0});
  tape.watch(z);
  CHECK_CLOSE(tape.gradient(tpf::prod(z), {z})[0],
              tpf::tensor({0.0, 8.0, 0.0}));
  const auto zz = tpf::tensor({0.0, 0.0, 4.0});
  tape.watch(zz);
  CHECK_CLOSE(tape.gradient(tpf::prod(zz), {zz})[0],
              tpf::tensor({0.0, 0.0, 0.0}));
}

TEST_CASE("argmax and argmin return the first extreme as int64") {
  const auto x = tpf::tensor({{1.0, 5.0, 5.0}, {7.0, 0.0, 2.0}});
  CHECK(tpf::argmax(x, 1).to_vector<int64_t>() == std::vector<int64_t>{1, 0});
  CHECK(tpf::argmin(x, 0).to_vector<int64_t>() ==
        std::vector<int64_t>{0, 1, 1});
  CHECK(tpf::argmax(x, 1).dtype() == tpf::int64);
  CHECK(tpf::argmax(tpf::transpose(x), 0).to_vector<int64_t>() ==
        std::vector<int64_t>{1, 0});
}

TEST_CASE("integer and bool reductions") {
  CHECK(tpf::sum(tpf::tensor({1, 2, 3})).item<int>() == 6);
  CHECK(tpf::sum(tpf::tensor({true, true, false})).item<int>() == 2);
  CHECK(tpf::prod(tpf::tensor({2, 3, 4})).item<int>() == 24);
  CHECK(tpf::max(tpf::tensor({2, 9, 4})).item<int>() == 9);
}

TEST_CASE("reduction errors name the op and the axis") {
  const auto x = tpf::ones({2, 3});
  CHECK_THROWS_AS(tpf::sum(x, {2}), tpf::IndexError);
  CHECK_THROWS_AS(tpf::sum(x, {0, 0}), tpf::ValueError);
  CHECK_THROWS_AS(tpf::argmax(x, -3), tpf::IndexError);
  try {
    (void)tpf::mean(x, {5});
    FAIL("expected IndexError");
  } catch (const tpf::IndexError& e) {
    CHECK(std::string(e.what()).rfind("[mean]", 0) == 0);
  }
}

TEST_CASE("degenerate inputs: OpCase rows") {
  using testing::degenerate;
  using testing::kNan;
  using testing::zeros64;
  const auto inf = std::numeric_limits<double>::infinity();
  const std::vector<OpCase> cases = {
      degenerate(
          "sum_of_empty_rows",
          [](const Ts& in) { return tpf::sum(in[0], {0}); }, {zeros64({0, 3})},
          zeros64({3})),
      degenerate(
          "mean_of_nothing_is_nan",
          [](const Ts& in) { return tpf::mean(in[0], {0}); }, {zeros64({0, 2})},
          tpf::tensor({kNan, kNan})),
      degenerate(
          "prod_of_nothing_is_one",
          [](const Ts& in) { return tpf::prod(in[0], {1}); }, {zeros64({2, 0})},
          tpf::tensor({1.0, 1.0})),
      degenerate(
          "max_of_nothing_is_minus_inf",
          [](const Ts& in) { return tpf::max(in[0], {1}); }, {zeros64({2, 0})},
          tpf::tensor({-inf, -inf})),
      degenerate(
          "max_with_nan", [](const Ts& in) { return tpf::max(in[0], {1}); },
          {tpf::tensor({{kNan, 1.0}, {2.0, 3.0}})}, tpf::tensor({kNan, 3.0})),
      degenerate(
          "min_with_nan", [](const Ts& in) { return tpf::min(in[0], {0}); },
          {tpf::tensor({{1.0, kNan}, {2.0, 0.0}})}, tpf::tensor({1.0, kNan})),
      degenerate(
          "argmax_first_nan",
          [](const Ts& in) { return tpf::argmax(in[0], 0); },
          {tpf::tensor({1.0, kNan, kNan})}, tpf::scalar(1, tpf::int64), false),
      degenerate(
          "sum_of_empty_to_scalar",
          [](const Ts& in) { return tpf::sum(in[0]); }, {zeros64({0, 4})},
          tpf::scalar(0.0, tpf::float64)),
  };
  for (const auto& c : cases) testing::run_op_case(c);
}

TEST_CASE("a full reduction gives the same bits at every thread count") {
  // Fixed blocks folded in order (distributed determinism compares runs
  // whose thread counts may differ). 1 << 20 elements: 32 blocks.
  const int before = tpf::config::intra_op_threads();
  const auto x = tpf::stateless_random_normal({1 << 20}, 7);
  std::vector<float> sums, maxes;
  for (int threads : {1, 2, 3}) {
    tpf::config::set_intra_op_threads(threads);
    sums.push_back(tpf::sum(x).item<float>());
    maxes.push_back(tpf::max(x).item<float>());
  }
  tpf::config::set_intra_op_threads(before);
  CHECK(sums[0] == sums[1]);
  CHECK(sums[0] == sums[2]);
  CHECK(maxes[0] == maxes[2]);
  // And it is a sum: float64 over the same values agrees to float rounding.
  CHECK(sums[0] ==
        doctest::Approx(tpf::sum(x.cast(tpf::float64)).item<double>())
            .epsilon(1e-5));
}

TEST_CASE("cumsum, logsumexp, variance and stddev: OpCase rows") {
  const tpf::Tensor x = x23();  // {{0.5, -1.25, 2.0}, {1.5, 0.25, -0.75}}
  const auto lse = [](std::initializer_list<double> v) {
    double s = 0;
    for (double e : v) s += std::exp(e);
    return std::log(s);
  };
  const std::vector<OpCase> cases = {
      {"cumsum_axis1",
       [](const Ts& in) { return tpf::cumsum(in[0], 1); },
       {x},
       tpf::tensor({{0.5, -0.75, 1.25}, {1.5, 1.75, 1.0}})},
      {"cumsum_axis0",
       [](const Ts& in) { return tpf::cumsum(in[0], 0); },
       {x},
       tpf::tensor({{0.5, -1.25, 2.0}, {2.0, -1.0, 1.25}})},
      {"cumsum_exclusive",
       [](const Ts& in) { return tpf::cumsum(in[0], 1, true); },
       {x},
       tpf::tensor({{0.0, 0.5, -0.75}, {0.0, 1.5, 1.75}})},
      {"cumsum_reverse",
       [](const Ts& in) { return tpf::cumsum(in[0], 1, false, true); },
       {x},
       tpf::tensor({{1.25, 0.75, 2.0}, {1.0, -0.5, -0.75}})},
      {"cumsum_exclusive_reverse_axis_minus1",
       [](const Ts& in) { return tpf::cumsum(in[0], -1, true, true); },
       {x},
       tpf::tensor({{0.75, 2.0, 0.0}, {-0.5, -0.75, 0.0}})},
      {"logsumexp_axis1",
       [](const Ts& in) { return tpf::logsumexp(in[0], {1}); },
       {x},
       tpf::tensor({lse({0.5, -1.25, 2.0}), lse({1.5, 0.25, -0.75})})},
      {"logsumexp_all_keepdims",
       [](const Ts& in) { return tpf::logsumexp(in[0], {}, true); },
       {x},
       tpf::tensor({{lse({0.5, -1.25, 2.0, 1.5, 0.25, -0.75})}})},
      {"variance_axis0",
       [](const Ts& in) { return tpf::variance(in[0], {0}); },
       {x},
       tpf::tensor({0.25, 0.5625, 1.890625})},
      {"stddev_axis0_keepdims",
       [](const Ts& in) { return tpf::stddev(in[0], {0}, true); },
       {x},
       tpf::tensor({{0.5, 0.75, 1.375}})},
  };
  for (const auto& c : cases) testing::run_op_case(c);
}

TEST_CASE("cumsum of a 3-D tensor and of many lines against a loop") {
  // (A, B, C) scanned along each axis; 40000 lines of 3 take the threads.
  for (const tpf::Shape& shape : {tpf::Shape{2, 3, 4}, tpf::Shape{40000, 3, 1}})
    for (int64_t axis = 0; axis < 3; ++axis) {
      const auto x = stateless64(shape, 5, -1.0, 1.0);
      const auto v = x.to_vector<double>();
      const int64_t B = shape[1], C = shape[2];
      std::vector<double> expected(v.size());
      for (int64_t a = 0; a < shape[0]; ++a)
        for (int64_t b = 0; b < B; ++b)
          for (int64_t c = 0; c < C; ++c) {
            const int64_t i = (a * B + b) * C + c;
            const int64_t step = axis == 0 ? B * C : axis == 1 ? C : 1;
            const int64_t first = axis == 0 ? a : axis == 1 ? b : c;
            expected[i] = v[i] + (first > 0 ? expected[i - step] : 0.0);
          }
      CHECK_CLOSE(tpf::cumsum(x, axis), tpf::from_vector(expected, shape),
                  1e-12, 1e-12);
    }
}

TEST_CASE("cumsum of integers wraps as TF's; bool sums as int64") {
  const int32_t big = std::numeric_limits<int32_t>::max();
  CHECK(tpf::cumsum(tpf::tensor<int32_t>({big, 1, 1})).to_vector<int32_t>() ==
        std::vector<int32_t>{big, std::numeric_limits<int32_t>::min(),
                             std::numeric_limits<int32_t>::min() + 1});
  const auto counts = tpf::cumsum(tpf::tensor({true, false, true}));
  CHECK(counts.dtype() == tpf::int64);
  CHECK(counts.to_vector<int64_t>() == std::vector<int64_t>{1, 1, 2});
  CHECK(tpf::cumsum(tpf::zeros({0, 3}), 0).shape() == tpf::Shape{0, 3});
  CHECK(tpf::cumsum(tpf::zeros({2, 0}), 0).shape() == tpf::Shape{2, 0});
}

namespace {
/**
 * A 3-D tensor of `dtype` whose elements are zeros, negative zeros, NaNs
 * (floats), and other values in about equal parts, in a fixed random order.
 */
tpf::Tensor mixed_zeros(const tpf::Shape& shape, tpf::DType dtype,
                        uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<double> v(static_cast<size_t>(shape.numel()));
  for (double& e : v) {
    const uint32_t kind = rng() % 4;
    e = kind == 0   ? 0.0
        : kind == 1 ? -0.0
        : kind == 2 && tpf::is_floating(dtype)
            ? std::numeric_limits<double>::quiet_NaN()
            : static_cast<double>(rng() % 7) - 3.0;
  }
  return tpf::cast(tpf::from_vector(v, shape), dtype);
}

/** Host count of x's (A, B, C) nonzero elements over the axes marked. */
std::vector<int64_t> host_count(const tpf::Tensor& x, std::array<bool, 3> red) {
  const tpf::Shape& s = x.shape();
  const auto v = x.to_vector<double>();
  const int64_t kept[3] = {red[0] ? 1 : s[0], red[1] ? 1 : s[1],
                           red[2] ? 1 : s[2]};
  std::vector<int64_t> out(static_cast<size_t>(kept[0] * kept[1] * kept[2]));
  for (int64_t a = 0; a < s[0]; ++a)
    for (int64_t b = 0; b < s[1]; ++b)
      for (int64_t c = 0; c < s[2]; ++c) {
        const int64_t k =
            ((red[0] ? 0 : a) * kept[1] + (red[1] ? 0 : b)) * kept[2] +
            (red[2] ? 0 : c);
        out[k] += v[(a * s[1] + b) * s[2] + c] != 0.0;  // NaN != 0
      }
  return out;
}
}  // namespace

TEST_CASE("count_nonzero, any and all of every dtype over every layout") {
  struct Layout {
    tpf::Shape shape;
    std::array<bool, 3> reduced;
    bool transposed;  // reduce the (C, B, A) view
  };
  const std::vector<Layout> layouts = {
      // CPU: fixed blocks folded in order; CUDA: partials, a second pass.
      {{1, 70001, 1}, {true, true, true}, false},
      // CPU: rows of kept outputs; CUDA: the column kernel, one part ...
      {{2, 40, 33}, {true, false, false}, false},
      // ... and several.
      {{1, 2000, 40}, {false, true, false}, false},
      // CPU: runs reduced in place; CUDA: strided reduced elements.
      {{2, 40, 33}, {true, false, true}, false},
      // CPU: transposed first (runs shorter than 16).
      {{70, 3, 2}, {true, false, true}, false},
      {{3, 5, 7}, {false, true, false}, true},
      // A contiguous run per output, of a view too.
      {{5, 2, 300}, {false, false, true}, false},
      {{5, 2, 300}, {true, false, false}, true},
      {{4, 3, 5}, {true, true, true}, false},
  };
  for (const tpf::Device& device : testing::all_devices())
    for (const tpf::DType dtype :
         {tpf::bool_, tpf::int32, tpf::int64, tpf::float32, tpf::float64})
      for (size_t i = 0; i < layouts.size(); ++i) {
        const Layout& l = layouts[i];
        CAPTURE(device.str());
        CAPTURE(tpf::dtype_name(dtype));
        CAPTURE(i);
        tpf::Tensor x = mixed_zeros(l.shape, dtype, uint32_t(i)).to(device);
        if (l.transposed) x = tpf::transpose(x, {2, 1, 0});
        std::vector<int64_t> axes;
        for (int64_t a = 0; a < 3; ++a)
          if (l.reduced[a]) axes.push_back(a);
        const std::vector<int64_t> expected = host_count(x, l.reduced);
        const tpf::Tensor count = tpf::count_nonzero(x, axes, true);
        REQUIRE(count.dtype() == tpf::int64);
        CHECK(count.device() == device);
        CHECK(count.to_vector<int64_t>() == expected);
        if (dtype != tpf::bool_) continue;
        // any and all are comparisons of the count, the sum of bools is it.
        int64_t reduced = 1;
        for (const int64_t a : axes) reduced *= x.shape()[a];
        std::vector<bool> any_expected, all_expected;
        for (const int64_t n : expected) {
          any_expected.push_back(n > 0);
          all_expected.push_back(n == reduced);
        }
        CHECK(tpf::any(x, axes, true).to_vector<bool>() == any_expected);
        CHECK(tpf::all(x, axes, true).to_vector<bool>() == all_expected);
        CHECK(tpf::sum(x, axes, true).to_vector<int64_t>() == expected);
      }
}

TEST_CASE("logsumexp of large, infinite and empty inputs") {
  using testing::kNan;
  const double inf = std::numeric_limits<double>::infinity();
  const auto big = tpf::tensor({1000.0, 1000.0});
  CHECK(tpf::logsumexp(big).item<double>() ==
        doctest::Approx(1000.0 + std::log(2.0)));
  tpf::GradientTape tape;
  tape.watch(big);
  CHECK_CLOSE(tape.gradient(tpf::logsumexp(big), {big})[0],
              tpf::tensor({0.5, 0.5}));
  CHECK(tpf::logsumexp(tpf::tensor({-inf, -inf})).item<double>() == -inf);
  CHECK(tpf::logsumexp(tpf::tensor({inf, 1.0})).item<double>() == inf);
  CHECK(std::isnan(tpf::logsumexp(tpf::tensor({kNan, 1.0})).item<double>()));
  const auto empty = tpf::logsumexp(tpf::zeros({2, 0}, tpf::float64), {1});
  CHECK(empty.to_vector<double>() == std::vector<double>{-inf, -inf});
  CHECK(tpf::logsumexp(tpf::tensor({1.0f, 2.0f})).dtype() == tpf::float32);
}

TEST_CASE("variance of integers is float32, as mean") {
  const auto v = tpf::variance(tpf::tensor<int32_t>({1, 2, 3, 4}));
  CHECK(v.dtype() == tpf::float32);
  CHECK(v.item<double>() == doctest::Approx(1.25));
  CHECK(tpf::stddev(tpf::tensor({2.0, 2.0})).item<double>() == 0.0);
}

TEST_CASE("cumsum, logsumexp and variance errors name the op") {
  using testing::expect_error;
  const auto x = tpf::ones({2, 3});
  const auto words = tpf::from_strings({"a", "b"}, {2});
  expect_error<tpf::IndexError>([&] { (void)tpf::cumsum(x, 2); },
                                "[cumsum] expected an axis in [-2, 2), got 2");
  expect_error<tpf::IndexError>([&] { (void)tpf::cumsum(tpf::scalar(1.0)); },
                                "[cumsum] expected an axis in [0, 0), got 0");
  expect_error<tpf::DTypeError>([&] { (void)tpf::cumsum(words); },
                                "[cumsum] expected a numeric dtype");
  expect_error<tpf::DTypeError>(
      [&] {
        (void)tpf::logsumexp(tpf::tensor({1, 2}));
      },
      "[logsumexp] expected float32 or float64, got int32");
  expect_error<tpf::IndexError>([&] { (void)tpf::logsumexp(x, {3}); },
                                "[logsumexp] expected an axis");
  expect_error<tpf::DTypeError>([&] { (void)tpf::variance(words); },
                                "[variance] expected a numeric dtype");
  expect_error<tpf::DTypeError>([&] { (void)tpf::stddev(words); },
                                "[stddev] expected a numeric dtype");
  expect_error<tpf::ValueError>(
      [&] {
        (void)tpf::variance(x, {0, 0});
      },
      "[variance] expected distinct axes");
}
