// argsort, sort and top_k: OpCase rows; every device's permutation against
// a stable sort written here, over ranks, axes, layouts, dtypes, ties, NaN
// and signed zeros; top_k's ties and gradient; errors.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "support/check.hpp"
#include "support/device.hpp"

using testing::all_devices;
using testing::degenerate;
using testing::kNan;
using testing::OpCase;
using Ts = std::vector<tpf::Tensor>;

namespace {

tpf::Tensor x23() {
  return tpf::tensor({{0.5, -1.25, 2.0}, {1.5, 0.25, -0.75}});
}

/**
 * The positions that sort one line stably: NaN as the largest value, -0
 * equal to +0, written apart from the kernels' comparator.
 */
std::vector<int64_t> reference_order(const std::vector<double>& line,
                                     bool descending) {
  const auto rank = [&](int64_t i) {
    const double v = line[i];
    const bool nan = std::isnan(v);
    // (class, value): NaN's class is above every number's.
    return descending ? std::pair{nan ? 0 : 1, nan ? 0.0 : -v}
                      : std::pair{nan ? 1 : 0, nan ? 0.0 : v};
  };
  std::vector<int64_t> order(line.size());
  std::iota(order.begin(), order.end(), int64_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t a, int64_t b) { return rank(a) < rank(b); });
  return order;
}

/** argsort of a (rows, cols) matrix along axis 1, row by row. */
std::vector<int64_t> reference_rows(const std::vector<double>& v, int64_t rows,
                                    int64_t cols, bool descending) {
  std::vector<int64_t> out;
  for (int64_t r = 0; r < rows; ++r) {
    const auto order = reference_order(
        {v.begin() + r * cols, v.begin() + (r + 1) * cols}, descending);
    out.insert(out.end(), order.begin(), order.end());
  }
  return out;
}

/** Values with many ties, signed zeros and NaN. */
std::vector<double> tied_values(int64_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int> pick(0, 7);
  std::vector<double> v(n);
  for (double& x : v) {
    const int k = pick(gen);
    x = k == 0 ? kNan : k == 1 ? -0.0 : k == 2 ? 0.0 : double(k % 4) - 1.5;
  }
  return v;
}

}  // namespace

TEST_CASE("sort, argsort and top_k: OpCase rows") {
  const auto x = x23();  // {{0.5, -1.25, 2.0}, {1.5, 0.25, -0.75}}
  const std::vector<OpCase> cases = {
      {"sort_rows",
       [](const Ts& in) { return tpf::sort(in[0]); },
       {x},
       tpf::tensor({{-1.25, 0.5, 2.0}, {-0.75, 0.25, 1.5}})},
      {"sort_columns_descending",
       [](const Ts& in) { return tpf::sort(in[0], 0, true); },
       {x},
       tpf::tensor({{1.5, 0.25, 2.0}, {0.5, -1.25, -0.75}})},
      {"sort_then_scale",
       [](const Ts& in) { return tpf::sort(in[0] * in[0], 1) * in[0]; },
       {x},
       tpf::tensor({{0.125, -1.953125, 8.0}, {0.09375, 0.140625, -1.6875}})},
      {"argsort_rows",
       [](const Ts& in) { return tpf::argsort(in[0], 1); },
       {x},
       tpf::tensor<int64_t>({{1, 0, 2}, {2, 1, 0}}),
       false},
      {"argsort_columns_descending",
       [](const Ts& in) { return tpf::argsort(in[0], 0, true); },
       {x},
       tpf::tensor<int64_t>({{1, 1, 0}, {0, 0, 1}}),
       false},
      {"top_k_values",
       [](const Ts& in) { return tpf::top_k(in[0], 2).values; },
       {x},
       tpf::tensor({{2.0, 0.5}, {1.5, 0.25}})},
      {"top_k_indices",
       [](const Ts& in) { return tpf::top_k(in[0], 2).indices; },
       {x},
       tpf::tensor<int64_t>({{2, 0}, {0, 1}}),
       false},
      degenerate(
          "sort_nan_last", [](const Ts& in) { return tpf::sort(in[0]); },
          {tpf::tensor({{kNan, 1.0, -2.0}, {3.0, kNan, kNan}})},
          tpf::tensor({{-2.0, 1.0, kNan}, {3.0, kNan, kNan}})),
      degenerate(
          "argsort_descending_nan_first",
          [](const Ts& in) { return tpf::argsort(in[0], -1, true); },
          {tpf::tensor({1.0, kNan, 3.0, kNan})},
          tpf::tensor<int64_t>({1, 3, 2, 0}), false),
      degenerate(
          "sort_of_an_empty_axis",
          [](const Ts& in) { return tpf::sort(in[0], 1); },
          {testing::zeros64({2, 0})}, testing::zeros64({2, 0})),
      degenerate(
          "top_k_of_none",
          [](const Ts& in) { return tpf::top_k(in[0], 0).values; },
          {testing::zeros64({2, 3})}, testing::zeros64({2, 0})),
  };
  for (const auto& c : cases) testing::run_op_case(c);
}

TEST_CASE("argsort on every device is the stable sort, ties and NaN included") {
  for (const tpf::Device& device : all_devices()) {
    CAPTURE(device.str());
    // Lines of 1 to 1000 entries: 0 to 10 merge passes on a GPU.
    for (const int64_t cols : {1, 2, 3, 7, 64, 100, 1000}) {
      const int64_t rows = cols > 100 ? 3 : 9;
      const auto v = tied_values(rows * cols, unsigned(cols));
      const auto x = tpf::from_vector(v, {rows, cols});
      for (const bool descending : {false, true}) {
        CAPTURE(cols);
        CAPTURE(descending);
        const auto expected = reference_rows(v, rows, cols, descending);
        CHECK(tpf::argsort(x.to(device), 1, descending).to_vector<int64_t>() ==
              expected);
        // float32; the matrix stored transposed (the sorted axis strided);
        // its transpose sorted along axis 0.
        CHECK(tpf::argsort(tpf::cast(x, tpf::float32).to(device), 1, descending)
                  .to_vector<int64_t>() == expected);
        const auto columns = tpf::transpose(x).contiguous().to(device);
        CHECK(tpf::argsort(tpf::transpose(columns), 1, descending)
                  .to_vector<int64_t>() == expected);
        CHECK(tpf::transpose(tpf::argsort(columns, 0, descending))
                  .to_vector<int64_t>() == expected);
      }
    }
    // Signed zeros tie; integers and bool sort too.
    CHECK(tpf::argsort(tpf::tensor({0.0, -0.0, 0.0, -0.0}).to(device))
              .to_vector<int64_t>() == std::vector<int64_t>{0, 1, 2, 3});
    CHECK(tpf::sort(tpf::tensor<int32_t>({3, -7, 3, 0}).to(device))
              .to_vector<int32_t>() == std::vector<int32_t>{-7, 0, 3, 3});
    CHECK(tpf::argsort(tpf::tensor({true, false, true, false}).to(device), 0,
                       true)
              .to_vector<int64_t>() == std::vector<int64_t>{0, 2, 1, 3});
  }
}

TEST_CASE("sort of a 3-D tensor along each axis matches its lines sorted") {
  const tpf::Shape shape{4, 5, 6};
  const auto v = tied_values(shape.numel(), 11);
  const auto x = tpf::from_vector(v, shape);
  for (int64_t axis = 0; axis < 3; ++axis) {
    CAPTURE(axis);
    // Line `line` of the axis: the others' coordinates in row-major order.
    const int64_t n = shape[axis];
    const int64_t inner = axis == 2 ? 1 : axis == 1 ? 6 : 30;
    const auto sorted = tpf::sort(x, axis).to_vector<double>();
    bool ok = true;
    for (int64_t outer = 0; outer < shape.numel() / (n * inner); ++outer)
      for (int64_t in = 0; in < inner; ++in) {
        std::vector<double> line(n);
        const int64_t base = outer * n * inner + in;
        for (int64_t j = 0; j < n; ++j) line[j] = v[base + j * inner];
        const auto order = reference_order(line, false);
        for (int64_t j = 0; j < n; ++j) {
          const double want = line[order[j]], got = sorted[base + j * inner];
          ok &= std::isnan(want)
                    ? std::isnan(got)
                    : got == want && std::signbit(got) == std::signbit(want);
        }
      }
    CHECK(ok);
  }
}

TEST_CASE("top_k: the largest first, ties to the lower position, gradient") {
  const auto x = tpf::tensor({{1.0, 3.0, 3.0, 2.0}, {kNan, 0.0, 5.0, 5.0}});
  const auto top = tpf::top_k(x, 3);
  CHECK(top.indices.to_vector<int64_t>() ==
        std::vector<int64_t>{1, 2, 3, 0, 2, 3});
  CHECK(top.indices.dtype() == tpf::int64);
  const auto values = top.values.to_vector<double>();
  CHECK(values[0] == 3.0);
  CHECK(std::isnan(values[3]));
  CHECK(values[5] == 5.0);
  CHECK(tpf::top_k(x, 4).values.shape() == tpf::Shape{2, 4});
  // Each output gradient goes back where its value came from.
  tpf::Variable w(tpf::tensor({0.5, -1.0, 4.0, 2.0}));
  tpf::GradientTape tape;
  const auto y = tpf::sum(tpf::top_k(w, 2).values * tpf::tensor({10.0, 100.0}));
  CHECK_CLOSE(tape.gradient(y, {w})[0], tpf::tensor({0.0, 0.0, 10.0, 100.0}));
}

TEST_CASE("sort errors name the op, expected and actual") {
  const auto x = tpf::ones({2, 3});
  testing::expect_error<tpf::ValueError>(
      [&] { (void)tpf::top_k(x, 4); },
      "[top_k] expected k in [0, 3] (the last axis' extent), got 4");
  testing::expect_error<tpf::ValueError>(
      [&] { (void)tpf::top_k(x, -1); },
      "[top_k] expected k in [0, 3] (the last axis' extent), got -1");
  testing::expect_error<tpf::ShapeError>(
      [&] { (void)tpf::top_k(tpf::scalar(1.0), 1); },
      "[top_k] expected a tensor of rank >= 1, got shape ()");
  testing::expect_error<tpf::IndexError>(
      [&] { (void)tpf::sort(x, 2); },
      "[sort] expected an axis in [-2, 2), got 2");
  testing::expect_error<tpf::IndexError>(
      [&] { (void)tpf::argsort(tpf::scalar(1.0)); },
      "[argsort] expected an axis in [0, 0), got -1");
  testing::expect_error<tpf::DTypeError>(
      [&] {
        (void)tpf::sort(tpf::from_strings({"b", "a"}, {2}));
      },
      "[sort] expected a numeric dtype, got string");
}
