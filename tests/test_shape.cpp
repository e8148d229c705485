// Shape ops: views share storage; copies are correct; gradients; errors.
#include "support/check.hpp"

using testing::OpCase;
using Ts = std::vector<tpf::Tensor>;

namespace {
tpf::Tensor x23() {
  return tpf::tensor({{0.5, -1.25, 2.0}, {1.5, 0.25, -0.75}});
}
}  // namespace

TEST_CASE("shape ops: forward, strided, float32 and gradcheck") {
  const auto x = x23();
  const std::vector<OpCase> cases = {
      {"reshape",
       [](const Ts& in) {
         return tpf::reshape(in[0], {3, -1});
       },
       {x},
       tpf::tensor({{0.5, -1.25}, {2.0, 1.5}, {0.25, -0.75}})},
      {"transpose",
       [](const Ts& in) { return tpf::transpose(in[0]); },
       {x},
       tpf::tensor({{0.5, 1.5}, {-1.25, 0.25}, {2.0, -0.75}})},
      {"slice",
       [](const Ts& in) {
         return tpf::slice(in[0], {0, 1}, {2, -1});
       },
       {x},
       tpf::tensor({{-1.25, 2.0}, {0.25, -0.75}})},
      {"concat",
       [](const Ts& in) {
         return tpf::concat({in[0], in[0] * 2.0}, 0);
       },
       {x},
       tpf::tensor({{0.5, -1.25, 2.0},
                    {1.5, 0.25, -0.75},
                    {1.0, -2.5, 4.0},
                    {3.0, 0.5, -1.5}})},
      {"split",
       [](const Ts& in) {
         return tpf::split(in[0], {1, 2}, 1)[1];
       },
       {x},
       tpf::tensor({{-1.25, 2.0}, {0.25, -0.75}})},
      {"broadcast_to",
       [](const Ts& in) {
         return tpf::broadcast_to(tpf::slice(in[0], {0, 0}, {1, 3}), {2, 3});
       },
       {x},
       tpf::tensor({{0.5, -1.25, 2.0}, {0.5, -1.25, 2.0}})},
      {"gather",
       [](const Ts& in) {
         return tpf::gather(in[0], tpf::tensor({2, 0, 2}).to(in[0].device()),
                            1);
       },
       {x},
       tpf::tensor({{2.0, 0.5, 2.0}, {-0.75, 1.5, -0.75}})},
      {"expand_squeeze",
       [](const Ts& in) { return tpf::squeeze(tpf::expand_dims(in[0], 1)); },
       {x},
       x},
      {"stack",
       [](const Ts& in) {
         return tpf::stack({in[0], in[0] * 2.0}, 1);
       },
       {x},
       tpf::reshape(tpf::tensor({0.5, -1.25, 2.0, 1.0, -2.5, 4.0, 1.5, 0.25,
                                 -0.75, 3.0, 0.5, -1.5}),
                    {2, 2, 3})},
      {"unstack_restack",
       [](const Ts& in) {
         auto cols = tpf::unstack(in[0], 1);  // 3 columns of 2
         return tpf::stack({cols[2], cols[0] * cols[1]}, 0);
       },
       {x},
       tpf::tensor({{2.0, -0.75}, {-0.625, 0.375}})},
  };
  for (const auto& c : cases) testing::run_op_case(c);
}

TEST_CASE("views share storage; reshape of a non-contiguous tensor copies") {
  const auto x = tpf::arange(0.0, 12.0, 1.0, tpf::float32);
  const auto r = tpf::reshape(x, {3, 4});
  CHECK(r.raw_data() == x.raw_data());
  const auto t = tpf::transpose(r);
  CHECK(t.raw_data() == x.raw_data());
  CHECK_FALSE(t.is_contiguous());
  const auto s = tpf::slice(r, {1, 1}, {2, 2});
  CHECK(s.to_vector<float>() == std::vector<float>{5, 6, 9, 10});
  const auto flat = tpf::reshape(t, {12});
  CHECK(flat.to_vector<float>() ==
        std::vector<float>{0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11});
  CHECK(t.contiguous().is_contiguous());
  const auto b = tpf::broadcast_to(tpf::tensor({1.f, 2.f}), {3, 2});
  CHECK(b.strides()[0] == 0);
  CHECK(b.to_vector<float>() == std::vector<float>{1, 2, 1, 2, 1, 2});
}

TEST_CASE("reshape of a non-contiguous tensor is a view where strides allow") {
  // (batch 3, time 4, features 5): one time step of every sequence.
  const auto seq = tpf::arange(0.0, 60.0, 1.0, tpf::float32);
  const auto x = tpf::reshape(seq, {3, 4, 5});
  const auto step = tpf::slice(x, {0, 2, 0}, {3, 1, 5});
  const std::vector<float> step_values = {10, 11, 12, 13, 14, 30, 31, 32,
                                          33, 34, 50, 51, 52, 53, 54};
  // Size-1 axes go and come without a copy, the rows keeping their stride.
  const auto squeezed = tpf::squeeze(step, {1});
  CHECK(squeezed.raw_data() == step.raw_data());
  CHECK(squeezed.strides() == tpf::Shape{20, 1});
  CHECK(squeezed.to_vector<float>() == step_values);
  const auto expanded = tpf::expand_dims(squeezed, 0);
  CHECK(expanded.raw_data() == step.raw_data());
  CHECK(expanded.to_vector<float>() == step_values);
  // Time steps 1..2 of every sequence: (3, 2, 5) merges to (3, 10) and
  // splits to (3, 5, 2) as views, each sequence's steps one run.
  const auto steps = tpf::slice(x, {0, 1, 0}, {3, 2, 5});
  const auto steps_merged = tpf::reshape(steps, {3, 10});
  CHECK(steps_merged.raw_data() == steps.raw_data());
  CHECK(steps_merged.strides() == tpf::Shape{20, 1});
  CHECK(steps_merged.to_vector<float>() == steps.to_vector<float>());
  const auto steps_split = tpf::reshape(steps, {3, 5, 2});
  CHECK(steps_split.raw_data() == steps.raw_data());
  CHECK(steps_split.to_vector<float>() == steps.to_vector<float>());
  // A broadcast row keeps its stride 0 through size-1 axes; flattened, it
  // is copied.
  const auto rows3 = tpf::broadcast_to(tpf::tensor({1.f, 2.f}), {3, 2});
  CHECK(tpf::reshape(rows3, {3, 1, 2}).strides() == tpf::Shape{0, 2, 1});
  CHECK(tpf::reshape(rows3, {6}).to_vector<float>() ==
        std::vector<float>{1, 2, 1, 2, 1, 2});
  CHECK(tpf::reshape(tpf::slice(x, {0, 0, 0}, {3, 0, 5}), {0, 4}).numel() == 0);
  const auto merged = tpf::reshape(
      tpf::slice(tpf::transpose(x, {1, 0, 2}), {0, 1, 0}, {4, 2, 5}), {4, 10});
  // Axes that do not continue each other are copied, in logical order: the
  // time-major view's (batch 1..2, features) merged into 10 per time step.
  std::vector<float> time_major;
  for (int t = 0; t < 4; ++t)
    for (int b = 1; b < 3; ++b)
      for (int f = 0; f < 5; ++f) time_major.push_back(b * 20 + t * 5 + f);
  CHECK(merged.is_contiguous());
  CHECK(merged.to_vector<float>() == time_major);
  // Columns of a matrix cannot be flattened without a copy.
  const auto column = tpf::slice(tpf::reshape(seq, {12, 5}), {0, 1}, {12, 1});
  const auto flat = tpf::reshape(column, {12});
  CHECK(flat.strides() == tpf::Shape{5});
  CHECK(flat.raw_data() == column.raw_data());
  // Gradients flow back through a view reshape to the strided input's shape.
  tpf::GradientTape tape;
  tape.watch(x);
  const auto y = tpf::squeeze(tpf::slice(x, {0, 2, 0}, {3, 1, 5}), {1});
  const auto g = tape.gradient(tpf::sum(y * y), {x})[0].to_vector<float>();
  for (int i = 0; i < 60; ++i)
    CHECK(g[i] == ((i / 5) % 4 == 2 ? 2.f * i : 0.f));
}

TEST_CASE("split into equal parts, one_hot, shuffle") {
  const auto parts = tpf::split(tpf::arange(0, 6), 3);
  REQUIRE(parts.size() == 3);
  CHECK(parts[2].to_vector<int>() == std::vector<int>{4, 5});
  const auto oh = tpf::one_hot(tpf::tensor({0, 2, 5}), 3);
  CHECK(oh.shape() == tpf::Shape{3, 3});
  CHECK(oh.to_vector<float>() == std::vector<float>{1, 0, 0, 0, 0, 1, 0, 0, 0});
  tpf::manual_seed(7);
  const auto a = tpf::shuffle(tpf::arange(0, 10)).to_vector<int>();
  tpf::manual_seed(7);
  const auto b = tpf::shuffle(tpf::arange(0, 10)).to_vector<int>();
  CHECK(a == b);
  auto sorted = a;
  std::sort(sorted.begin(), sorted.end());
  CHECK(sorted == std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
}

TEST_CASE("gather with repeated indices accumulates its gradient") {
  const auto p = tpf::tensor({1.0, 2.0, 3.0});
  tpf::GradientTape tape;
  tape.watch(p);
  const auto y = tpf::sum(tpf::gather(p, tpf::tensor({0, 0, 2})));
  CHECK_CLOSE(tape.gradient(y, {p})[0], tpf::tensor({2.0, 0.0, 1.0}));
}

TEST_CASE("shape op errors name the op, expected and actual") {
  const auto x = tpf::ones({2, 3});
  CHECK_THROWS_AS(tpf::reshape(x, {4, 2}), tpf::ShapeError);
  CHECK_THROWS_AS(tpf::reshape(x, {-1, -1}), tpf::ShapeError);
  CHECK_THROWS_AS(tpf::transpose(x, {0, 0}), tpf::ValueError);
  CHECK_THROWS_AS(tpf::slice(x, {0, 2}, {1, 2}), tpf::IndexError);
  CHECK_THROWS_AS(tpf::concat({x, tpf::ones({2, 2, 1})}, 0), tpf::ShapeError);
  CHECK_THROWS_AS(tpf::concat({x, tpf::ones({2, 3}, tpf::float64)}, 0),
                  tpf::DTypeError);
  CHECK_THROWS_AS(tpf::gather(x, tpf::tensor({0, 3}), 1), tpf::IndexError);
  CHECK_THROWS_AS(tpf::gather(x, tpf::tensor({0.5}), 1), tpf::DTypeError);
  CHECK_THROWS_AS(tpf::split(x, 2, 1), tpf::ShapeError);
  CHECK_THROWS_AS(tpf::squeeze(x, {0}), tpf::ShapeError);
  CHECK_THROWS_AS(tpf::broadcast_to(x, {3, 3}), tpf::ShapeError);
  testing::expect_error<tpf::ShapeError>(
      [&] {
        (void)tpf::stack({x, tpf::ones({3, 2})});
      },
      "[stack]");
  testing::expect_error<tpf::ValueError>([&] { (void)tpf::stack({}); },
                                         "[stack]");
  testing::expect_error<tpf::IndexError>([&] { (void)tpf::unstack(x, 2); },
                                         "[unstack]");
  try {
    (void)tpf::reshape(x, {4, 2});
  } catch (const tpf::ShapeError& e) {
    const std::string msg = e.what();
    CHECK(msg.rfind("[reshape]", 0) == 0);
    CHECK(msg.find("6 elements") != std::string::npos);
    CHECK(msg.find("(4, 2)") != std::string::npos);
  }
}

TEST_CASE("degenerate inputs: OpCase rows") {
  using testing::degenerate;
  using testing::zeros64;
  const std::vector<OpCase> cases = {
      degenerate(
          "concat_with_empty",
          [](const Ts& in) {
            return tpf::concat({in[0], in[1]}, 0);
          },
          {zeros64({0, 2}), tpf::tensor({{1.0, 2.0}})},
          tpf::tensor({{1.0, 2.0}})),
      degenerate(
          "reshape_empty",
          [](const Ts& in) {
            return tpf::reshape(in[0], {3, 0});
          },
          {zeros64({0, 3})}, zeros64({3, 0})),
      degenerate(
          "transpose_empty", [](const Ts& in) { return tpf::transpose(in[0]); },
          {zeros64({0, 2})}, zeros64({2, 0})),
      degenerate(
          "slice_nothing",
          [](const Ts& in) {
            return tpf::slice(in[0], {1, 0}, {0, 2});
          },
          {tpf::tensor({{1.0, 2.0}, {3.0, 4.0}})}, zeros64({0, 2})),
      degenerate(
          "split_empty_batch",
          [](const Ts& in) { return tpf::split(in[0], 2, 0)[1]; },
          {zeros64({0, 3})}, zeros64({0, 3})),
      degenerate(
          "stack_empty",
          [](const Ts& in) {
            return tpf::stack({in[0], in[0]}, 2);
          },
          {zeros64({0, 3})}, zeros64({0, 3, 2})),
      degenerate(
          "unstack_empty_rows",
          [](const Ts& in) { return tpf::unstack(in[0], 1)[0]; },
          {zeros64({0, 2})}, zeros64({0})),
      degenerate(
          "gather_no_indices",
          [](const Ts& in) {
            const auto none = tpf::zeros({0}, tpf::int64, in[0].device());
            return tpf::gather(in[0], none, 0);
          },
          {tpf::tensor({{1.0, 2.0}, {3.0, 4.0}})}, zeros64({0, 2})),
      degenerate(
          "broadcast_to_zero_rows",
          [](const Ts& in) {
            return tpf::broadcast_to(in[0], {0, 2});
          },
          {tpf::tensor({1.0, 2.0})}, zeros64({0, 2})),
  };
  for (const auto& c : cases) testing::run_op_case(c);
}

TEST_CASE("tile and pad: OpCase rows") {
  const auto x = x23();  // {{0.5, -1.25, 2.0}, {1.5, 0.25, -0.75}}
  const std::vector<OpCase> cases = {
      {"tile_rows_and_columns",
       [](const Ts& in) {
         return tpf::tile(in[0], {2, 2});
       },
       {x},
       tpf::tensor({{0.5, -1.25, 2.0, 0.5, -1.25, 2.0},
                    {1.5, 0.25, -0.75, 1.5, 0.25, -0.75},
                    {0.5, -1.25, 2.0, 0.5, -1.25, 2.0},
                    {1.5, 0.25, -0.75, 1.5, 0.25, -0.75}})},
      {"tile_columns_once",
       [](const Ts& in) {
         return tpf::tile(in[0], {1, 1}) * 2.0;
       },
       {x},
       tpf::tensor({{1.0, -2.5, 4.0}, {3.0, 0.5, -1.5}})},
      {"pad_both_axes",
       [](const Ts& in) {
         return tpf::pad(in[0], {{1, 0}, {0, 2}});
       },
       {x},
       tpf::tensor({{0.0, 0.0, 0.0, 0.0, 0.0},
                    {0.5, -1.25, 2.0, 0.0, 0.0},
                    {1.5, 0.25, -0.75, 0.0, 0.0}})},
      {"pad_constant_columns",
       [](const Ts& in) {
         return tpf::pad(in[0], {{0, 0}, {1, 1}}, -1.0);
       },
       {x},
       tpf::tensor(
           {{-1.0, 0.5, -1.25, 2.0, -1.0}, {-1.0, 1.5, 0.25, -0.75, -1.0}})},
      {"pad_reflect",
       [](const Ts& in) {
         return tpf::pad(in[0], {{1, 1}, {2, 1}}, tpf::PadMode::reflect);
       },
       {x},
       tpf::tensor({{-0.75, 0.25, 1.5, 0.25, -0.75, 0.25},
                    {2.0, -1.25, 0.5, -1.25, 2.0, -1.25},
                    {-0.75, 0.25, 1.5, 0.25, -0.75, 0.25},
                    {2.0, -1.25, 0.5, -1.25, 2.0, -1.25}})},
      {"pad_symmetric",
       [](const Ts& in) {
         return tpf::pad(in[0], {{1, 0}, {2, 3}}, tpf::PadMode::symmetric);
       },
       {x},
       tpf::tensor({{-1.25, 0.5, 0.5, -1.25, 2.0, 2.0, -1.25, 0.5},
                    {-1.25, 0.5, 0.5, -1.25, 2.0, 2.0, -1.25, 0.5},
                    {0.25, 1.5, 1.5, 0.25, -0.75, -0.75, 0.25, 1.5}})},
  };
  for (const auto& c : cases) testing::run_op_case(c);
}

TEST_CASE("tile and pad keep dtypes, take empty and zero counts") {
  const auto ints = tpf::tensor<int32_t>({1, 2});
  CHECK(tpf::tile(ints, {3}).to_vector<int32_t>() ==
        std::vector<int32_t>{1, 2, 1, 2, 1, 2});
  CHECK(tpf::pad(ints, {{2, 1}}, 7).to_vector<int32_t>() ==
        std::vector<int32_t>{7, 7, 1, 2, 7});
  CHECK(tpf::tile(ints, {0}).shape() == tpf::Shape{0});
  CHECK(tpf::tile(tpf::scalar(3.0), {}).item<double>() == 3.0);
  CHECK(tpf::pad(tpf::zeros({0, 2}), {{1, 1}, {0, 0}}).shape() ==
        tpf::Shape{2, 2});
  const auto flags = tpf::pad(tpf::tensor({true}), {{1, 0}});
  CHECK(flags.dtype() == tpf::bool_);
  CHECK(flags.to_vector<uint8_t>() == std::vector<uint8_t>{0, 1});
  // The gradient of tile sums the copies.
  tpf::Variable w(tpf::tensor({1.0, 2.0}));
  tpf::GradientTape tape;
  const auto y =
      tpf::sum(tpf::tile(w, {3}) * tpf::arange(0.0, 6.0, 1.0, tpf::float64));
  CHECK_CLOSE(tape.gradient(y, {w})[0], tpf::tensor({6.0, 9.0}));
}

TEST_CASE("tile and pad errors name the op, expected and actual") {
  const auto x = tpf::ones({2, 3});
  testing::expect_error<tpf::ValueError>(
      [&] { (void)tpf::tile(x, {2}); },
      "[tile] expected 2 multiples (x's rank), got 1");
  testing::expect_error<tpf::ValueError>(
      [&] {
        (void)tpf::tile(x, {1, -1});
      },
      "[tile] expected multiples >= 0, got -1 for axis 1");
  testing::expect_error<tpf::ValueError>(
      [&] {
        (void)tpf::tile(x, {int64_t{1} << 62, 4});
      },
      "[tile] expected an extent below 2^63");
  testing::expect_error<tpf::ValueError>(
      [&] {
        (void)tpf::pad(x, {{1, 1}});
      },
      "[pad] expected 2 (before, after) pairs (x's rank), got 1");
  testing::expect_error<tpf::ValueError>(
      [&] {
        (void)tpf::pad(x, {{0, 0}, {-1, 0}});
      },
      "[pad] expected paddings >= 0, got (-1, 0) for axis 1");
  testing::expect_error<tpf::ValueError>(
      [&] {
        (void)tpf::pad(x, {{0, 0}, {0, std::numeric_limits<int64_t>::max()}});
      },
      "[pad] expected an extent below 2^63 on axis 1");
  testing::expect_error<tpf::DTypeError>(
      [&] {
        (void)tpf::pad(tpf::from_strings({"a"}, {1}), {{1, 0}});
      },
      "[pad] expected a numeric dtype, got string");
  testing::expect_error<tpf::ValueError>(
      [&] {
        (void)tpf::pad(x, {{0, 0}, {0, 3}}, tpf::PadMode::reflect);
      },
      "[pad] expected paddings <= 2 for axis 1 (extent 3, mode reflect), got "
      "(0, 3)");
  testing::expect_error<tpf::ValueError>(
      [&] {
        (void)tpf::pad(x, {{3, 0}, {0, 0}}, tpf::PadMode::symmetric);
      },
      "[pad] expected paddings <= 2 for axis 0 (extent 2, mode symmetric), "
      "got (3, 0)");
  testing::expect_error<tpf::ValueError>(
      [&] {
        (void)tpf::pad(tpf::zeros({0}), {{1, 0}}, tpf::PadMode::symmetric);
      },
      "[pad] expected paddings <= 0 for axis 0 (extent 0, mode symmetric)");
}

TEST_CASE("reverse: OpCase rows") {
  const auto x = x23();  // {{0.5, -1.25, 2.0}, {1.5, 0.25, -0.75}}
  const std::vector<OpCase> cases = {
      {"reverse_columns",
       [](const Ts& in) { return tpf::reverse(in[0], {1}); },
       {x},
       tpf::tensor({{2.0, -1.25, 0.5}, {-0.75, 0.25, 1.5}})},
      {"reverse_rows",
       [](const Ts& in) { return tpf::reverse(in[0], {0}) * in[0]; },
       {x},
       tpf::tensor({{0.75, -0.3125, -1.5}, {0.75, -0.3125, -1.5}})},
      {"reverse_both_axes",
       [](const Ts& in) {
         return tpf::reverse(in[0], {0, -1});
       },
       {x},
       tpf::tensor({{-0.75, 0.25, 1.5}, {2.0, -1.25, 0.5}})},
  };
  for (const auto& c : cases) testing::run_op_case(c);
}

TEST_CASE("reverse matches an index loop over ranks, layouts and dtypes") {
  // (2, 3, 4) reversed along axes 0 and 2: out[i][j][k] = x[1-i][j][3-k].
  const auto x =
      tpf::reshape(tpf::arange(0.0, 24.0, 1.0, tpf::float32), {2, 3, 4});
  const auto r = tpf::reverse(x, {2, 0}).to_vector<float>();
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 4; ++k)
        CHECK(r[(i * 3 + j) * 4 + k] == float(((1 - i) * 3 + j) * 4 + 3 - k));
  // A transposed input, its last axis strided.
  const auto t = tpf::transpose(tpf::reshape(x, {6, 4}));  // (4, 6)
  const auto rt = tpf::reverse(t, {1}).to_vector<float>();
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 6; ++j) CHECK(rt[i * 6 + j] == float((5 - j) * 4 + i));
  // Long enough to be split over threads: a line, and whole rows.
  const int64_t n = 100003;
  const auto line =
      tpf::reverse(tpf::arange(0.0, double(n), 1.0, tpf::int64), {0})
          .to_vector<int64_t>();
  bool line_ok = true;
  for (int64_t i = 0; i < n; ++i) line_ok &= line[i] == n - 1 - i;
  CHECK(line_ok);
  const auto rows = tpf::reverse(
      tpf::reshape(tpf::arange(0.0, 7000.0, 1.0, tpf::float64), {1000, 7}),
      {0});
  const auto rv = rows.to_vector<double>();
  bool rows_ok = true;
  for (int i = 0; i < 1000; ++i)
    for (int j = 0; j < 7; ++j) rows_ok &= rv[i * 7 + j] == (999 - i) * 7 + j;
  CHECK(rows_ok);
  // Other dtypes, strings included.
  CHECK(
      tpf::reverse(tpf::tensor<int32_t>({1, 2, 3}), {0}).to_vector<int32_t>() ==
      std::vector<int32_t>{3, 2, 1});
  CHECK(tpf::reverse(tpf::tensor({true, false}), {0}).to_vector<uint8_t>() ==
        std::vector<uint8_t>{0, 1});
  CHECK(
      tpf::reverse(tpf::from_strings({"a", "b", "c"}, {3}), {0}).to_strings() ==
      std::vector<std::string>{"c", "b", "a"});
  // No axes, extent-1 axes and empty tensors: the values as they are.
  CHECK(tpf::reverse(x, {}).to_vector<float>() == x.to_vector<float>());
  CHECK(tpf::reverse(tpf::ones({1, 3}), {0}).shape() == tpf::Shape{1, 3});
  CHECK(tpf::reverse(tpf::zeros({0, 3}), {1}).shape() == tpf::Shape{0, 3});
}

TEST_CASE(
    "pad mirrors strings and integers; its gradient adds mirrored edges") {
  CHECK(tpf::pad(tpf::from_strings({"a", "b", "c"}, {3}), {{2, 1}},
                 tpf::PadMode::reflect)
            .to_strings() ==
        std::vector<std::string>{"c", "b", "a", "b", "c", "b"});
  CHECK(
      tpf::pad(tpf::tensor<int32_t>({1, 2}), {{2, 2}}, tpf::PadMode::symmetric)
          .to_vector<int32_t>() == std::vector<int32_t>{2, 1, 1, 2, 2, 1});
  // [1 2 3] -> [3 2 1 2 3 2 1] weighted 0..6: x0 is at 2 and 6, x1 at 1, 3
  // and 5, x2 at 0 and 4.
  tpf::Variable w(tpf::tensor({1.0, 2.0, 3.0}));
  tpf::GradientTape tape;
  const auto y = tpf::sum(tpf::pad(w, {{2, 2}}, tpf::PadMode::reflect) *
                          tpf::arange(0.0, 7.0, 1.0, tpf::float64));
  CHECK_CLOSE(tape.gradient(y, {w})[0], tpf::tensor({8.0, 9.0, 4.0}));
}

TEST_CASE("reverse errors name the op, expected and actual") {
  const auto x = tpf::ones({2, 3});
  testing::expect_error<tpf::ValueError>(
      [&] {
        (void)tpf::reverse(x, {1, -1});
      },
      "[reverse] expected each axis once, got axis 1 more than once");
  testing::expect_error<tpf::IndexError>(
      [&] { (void)tpf::reverse(x, {2}); },
      "[reverse] expected an axis in [-2, 2), got 2");
}
