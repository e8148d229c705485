// Elementwise ops: forward references, broadcasting, strided inputs, float64
// gradcheck (one OpCase row each), dtype promotion and bad-input errors.
#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include "support/check.hpp"
#include "support/fixed_threads.hpp"

using testing::map1;
using testing::map2;
using testing::OpCase;
using testing::uniform64;
using Ts = std::vector<tpf::Tensor>;

namespace {

tpf::Tensor x23() {
  return tpf::tensor({{0.5, -1.25, 2.0}, {1.5, 0.25, -0.75}});
}
tpf::Tensor pos23() {
  return tpf::tensor({{0.5, 1.25, 2.0}, {1.5, 0.25, 3.0}});
}

OpCase unary(const char* name, tpf::Tensor (*f)(const tpf::Tensor&),
             double (*ref)(double), tpf::Tensor x) {
  return {name, [f](const Ts& in) { return f(in[0]); }, {x}, map1(x, ref)};
}

}  // namespace

TEST_CASE("unary ops: forward, strided, float32 and gradcheck") {
  const std::vector<OpCase> cases = {
      unary(
          "neg", tpf::neg, [](double v) { return -v; }, x23()),
      unary(
          "exp", tpf::exp, [](double v) { return std::exp(v); }, x23()),
      unary(
          "log", tpf::log, [](double v) { return std::log(v); }, pos23()),
      unary(
          "sqrt", tpf::sqrt, [](double v) { return std::sqrt(v); }, pos23()),
      unary(
          "rsqrt", tpf::rsqrt, [](double v) { return 1 / std::sqrt(v); },
          pos23()),
      unary(
          "abs", tpf::abs, [](double v) { return std::abs(v); }, x23()),
      unary(
          "square", tpf::square, [](double v) { return v * v; }, x23()),
      unary(
          "sin", tpf::sin, [](double v) { return std::sin(v); }, x23()),
      unary(
          "cos", tpf::cos, [](double v) { return std::cos(v); }, x23()),
      unary(
          "tanh", tpf::tanh, [](double v) { return std::tanh(v); }, x23()),
      unary(
          "sigmoid", tpf::sigmoid,
          [](double v) { return 1 / (1 + std::exp(-v)); }, x23()),
      unary(
          "relu", tpf::relu, [](double v) { return v > 0 ? v : 0.0; }, x23()),
      unary(
          "expm1", tpf::expm1, [](double v) { return std::expm1(v); }, x23()),
      unary(
          "log1p", tpf::log1p, [](double v) { return std::log1p(v); }, pos23()),
      unary(
          "erf", tpf::erf, [](double v) { return std::erf(v); }, x23()),
      unary(
          "atan", tpf::atan, [](double v) { return std::atan(v); }, x23()),
      unary(
          "atan far from 0", tpf::atan, [](double v) { return std::atan(v); },
          tpf::tensor({{-1e4, -3.0, 40.0}, {1e-8, 7.5, 1e4}})),
      unary(
          "sign", tpf::sign, [](double v) { return double((v > 0) - (v < 0)); },
          x23()),
  };
  for (const auto& c : cases) testing::run_op_case(c);
}

TEST_CASE(
    "float32 tanh: within 5 ulp on a sweep of every binade, exact specials") {
  // The CPU computes float32 tanh as a rational approximation
  // (src/cpu/tanh_float.hpp); every 997th float in [2^-126, 12], both signs,
  // in batches and in the scalar tail alike (an odd length).
  std::vector<float> xs;
  for (uint32_t bits = 0x00800000u; bits <= 0x41400000u; bits += 997) {
    float v;
    std::memcpy(&v, &bits, sizeof v);
    xs.push_back(v);
    xs.push_back(-v);
  }
  xs.push_back(1.0f);
  const auto y =
      tpf::tanh(tpf::from_vector(xs, {int64_t(xs.size())})).to_vector<float>();
  const auto ordinal = [](float f) {
    int32_t i;
    std::memcpy(&i, &f, sizeof i);
    return i < 0 ? int64_t{INT32_MIN} - i : int64_t{i};
  };
  int64_t worst = 0;
  float worst_at = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    const float want = static_cast<float>(std::tanh(double(xs[i])));
    const int64_t ulps = std::abs(ordinal(y[i]) - ordinal(want));
    if (ulps > worst) worst = ulps, worst_at = xs[i];
  }
  CAPTURE(worst_at);
  CHECK(worst <= 5);
  const float inf = std::numeric_limits<float>::infinity();
  const auto special =
      tpf::tanh(
          tpf::from_vector(std::vector<float>{0.0f, -0.0f, inf, -inf, NAN,
                                              1e-30f, -3e-4f, 100.0f, -9.5f},
                           {9}))
          .to_vector<float>();
  CHECK(special[0] == 0.0f);
  CHECK_FALSE(std::signbit(special[0]));
  CHECK(std::signbit(special[1]));
  CHECK(special[2] == 1.0f);
  CHECK(special[3] == -1.0f);
  CHECK(std::isnan(special[4]));
  CHECK(special[5] == 1e-30f);
  CHECK(special[6] == -3e-4f);
  CHECK(special[7] == 1.0f);
  CHECK(special[8] == -1.0f);
}

TEST_CASE(
    "tanh_grad and sigmoid_grad: the gradient as a function, OpCase rows") {
  // Each row's function is a first-order gradient, so the harness's
  // gradcheck checks the fused op's own gradient wrt y and wrt g.
  const auto first_order = [](tpf::Tensor (*f)(const tpf::Tensor&)) {
    return [f](const Ts& in) {
      tpf::GradientTape tape;
      tape.watch(in[0]);
      return tape.gradient(tpf::sum(f(in[0]) * in[1]), {in[0]})[0];
    };
  };
  const tpf::Tensor x = x23(), g = pos23();
  auto expected = [&](double (*rule)(double)) {
    auto vx = x.to_vector<double>();
    const auto vg = g.to_vector<double>();
    for (size_t i = 0; i < vx.size(); ++i) vx[i] = rule(vx[i]) * vg[i];
    return tpf::from_vector(vx, x.shape());
  };
  const std::vector<OpCase> cases = {
      {"tanh_grad", first_order(tpf::tanh), {x, g}, expected([](double v) {
         return 1 - std::tanh(v) * std::tanh(v);
       })},
      {"sigmoid_grad",
       first_order(tpf::sigmoid),
       {x, g},
       expected([](double v) {
         const double s = 1 / (1 + std::exp(-v));
         return s * (1 - s);
       })},
  };
  for (const auto& c : cases) testing::run_op_case(c);
}

TEST_CASE("binary ops broadcast (2,3) with (3,)") {
  const tpf::Tensor a = x23(), b = tpf::tensor({0.75, -2.0, 1.5});
  const tpf::Tensor pa = pos23(), pb = tpf::tensor({0.5, 2.0, 1.5});
  auto bin = [](const char* name,
                tpf::Tensor (*f)(const tpf::Tensor&, const tpf::Tensor&),
                double (*ref)(double, double), tpf::Tensor x, tpf::Tensor y) {
    return OpCase{name,
                  [f](const Ts& in) { return f(in[0], in[1]); },
                  {x, y},
                  map2(x, y, ref)};
  };
  const std::vector<OpCase> cases = {
      bin(
          "add", tpf::add, [](double x, double y) { return x + y; }, a, b),
      bin(
          "sub", tpf::sub, [](double x, double y) { return x - y; }, a, b),
      bin(
          "mul", tpf::mul, [](double x, double y) { return x * y; }, a, b),
      bin(
          "div", tpf::div, [](double x, double y) { return x / y; }, a, b),
      bin(
          "pow",
          [](const tpf::Tensor& x, const tpf::Tensor& y) {
            return tpf::pow(x, y);
          },
          [](double x, double y) { return std::pow(x, y); }, pa, pb),
      bin(
          "minimum", tpf::minimum,
          [](double x, double y) { return std::min(x, y); }, a, b),
      bin(
          "maximum", tpf::maximum,
          [](double x, double y) { return std::max(x, y); }, a, b),
  };
  for (const auto& c : cases) testing::run_op_case(c);
}

TEST_CASE("broadcasting (2,1) with (1,3) and scalars") {
  const tpf::Tensor col = tpf::tensor({{1.0}, {2.0}});
  const tpf::Tensor row = tpf::tensor({{10.0, 20.0, 30.0}});
  CHECK_CLOSE(col + row, tpf::tensor({{11.0, 21.0, 31.0}, {12.0, 22.0, 32.0}}));
  CHECK_CLOSE(2.0 * col - 1.0, tpf::tensor({{1.0}, {3.0}}));
  CHECK_CLOSE(1.0 / col, tpf::tensor({{1.0}, {0.5}}));
  const auto g = testing::gradcheck(
      [](const Ts& in) { return in[0] * in[1] + tpf::exp(in[0]); },
      {uniform64({2, 1}), uniform64({1, 3})});
  CHECK_MESSAGE(g.empty(), g);
  // Both operands broadcast, and scalars on whichever device the inputs are.
  testing::run_op_case(
      {"col_row_scalars",
       [](const Ts& in) {
         return 2.0 * (in[0] * in[1]) - in[1] / (in[0] * in[0] + 1.0);
       },
       {col, row},
       tpf::tensor({{15.0, 30.0, 45.0}, {38.0, 76.0, 114.0}})});
}

TEST_CASE("large broadcast and contiguous paths run in parallel and agree") {
  // Three threads over 301 rows of 997: every thread but the first starts
  // inside a row, of the output and of each rank-2 loop plan.
  const testing::FixedThreads threads(3);
  for (const int64_t rows : {301, 7}) {
    CAPTURE(rows);
    const tpf::Tensor a = tpf::random_uniform({rows, 997});
    const tpf::Tensor b = tpf::random_uniform({997});
    const tpf::Tensor col = tpf::random_uniform({rows, 1});
    const auto va = a.to_vector<float>(), vb = b.to_vector<float>(),
               vc = col.to_vector<float>();
    const auto row_sum = (a + b).to_vector<float>();
    const auto col_diff = (col - a).to_vector<float>();
    int64_t bad = 0;
    for (size_t i = 0; i < va.size(); ++i) {
      bad += row_sum[i] != va[i] + vb[i % 997];
      bad += col_diff[i] != vc[i / 997] - va[i];
    }
    CHECK(bad == 0);
    const tpf::Tensor e = tpf::exp(tpf::transpose(a));
    CHECK_CLOSE(tpf::transpose(e), tpf::exp(a));
  }
}

TEST_CASE("outputs above 8 MiB take the streaming-store path and agree") {
  const int64_t n = 3'000'001;  // odd: unaligned chunk starts and a tail
  const tpf::Tensor a = tpf::random_uniform({n + 1}),
                    b = tpf::random_uniform({n});
  const tpf::Tensor a1 = tpf::slice(a, {1}, {n});  // misaligned input view
  const auto va = a1.to_vector<float>(), vb = b.to_vector<float>();
  const auto sum = (a1 + b).to_vector<float>();
  const auto scaled = (a1 * 2.0).to_vector<float>();
  const auto rel = tpf::relu(a1 - 0.5).to_vector<float>();
  int64_t bad = 0;
  for (int64_t i = 0; i < n; ++i) {
    bad += sum[i] != va[i] + vb[i];
    bad += scaled[i] != va[i] * 2.f;
    bad += rel[i] != std::max(va[i] - 0.5f, 0.f);
  }
  CHECK(bad == 0);
}

TEST_CASE("where, clip and cast") {
  const tpf::Tensor x = x23();
  const OpCase where_case{
      "where",
      [](const Ts& in) { return tpf::where(in[0] > in[1], in[0], in[1]); },
      {x, tpf::tensor({0.0, 0.0, 0.0})},
      tpf::tensor({{0.5, 0.0, 2.0}, {1.5, 0.25, 0.0}})};
  const OpCase clip_case{
      "clip",
      [](const Ts& in) { return tpf::clip(in[0], -1.0, 1.0); },
      {x},
      tpf::tensor({{0.5, -1.0, 1.0}, {1.0, 0.25, -0.75}})};
  for (const auto& c : {where_case, clip_case}) testing::run_op_case(c);
  tpf::GradientTape tape;
  tape.watch(x);
  const auto g = tape.gradient(tpf::sum(x.cast(tpf::float32) * 3.0), {x})[0];
  CHECK(g.dtype() == tpf::float64);
  CHECK_CLOSE(g, tpf::full({2, 3}, 3.0, tpf::float64));
  CHECK(tpf::tensor({1.7, -2.2, 0.0}).cast(tpf::int32).to_vector<int>() ==
        std::vector<int>{1, -2, 0});
  CHECK(tpf::tensor({1.7, 0.0}).cast(tpf::bool_).to_vector<int>() ==
        std::vector<int>{1, 0});
}

TEST_CASE("comparisons, logic and casts: forward, strided and float32") {
  // No gradients: the rows' outputs are bool or integer, or pass through one.
  const tpf::Tensor a = x23(), b = tpf::tensor({0.5, 0.25, -0.75});
  auto cmp = [&](const char* name,
                 tpf::Tensor (*f)(const tpf::Tensor&, const tpf::Tensor&),
                 double (*ref)(double, double)) {
    return OpCase{name,
                  [f](const Ts& in) { return f(in[0], in[1]); },
                  {a, b},
                  map2(a, b, ref),
                  false};
  };
  const auto i32 = tpf::tensor({{1, 5}, {-2, 4}});
  const std::vector<OpCase> cases = {
      cmp("equal", tpf::equal,
          [](double x, double y) { return double(x == y); }),
      cmp("not_equal", tpf::not_equal,
          [](double x, double y) { return double(x != y); }),
      cmp("less", tpf::less, [](double x, double y) { return double(x < y); }),
      cmp("less_equal", tpf::less_equal,
          [](double x, double y) { return double(x <= y); }),
      cmp("greater", tpf::greater,
          [](double x, double y) { return double(x > y); }),
      cmp("greater_equal", tpf::greater_equal,
          [](double x, double y) { return double(x >= y); }),
      {"and_or_not",
       [](const Ts& in) {
         return (in[0] < in[1]) || ((in[0] >= in[1]) && !(in[0] == in[1]));
       },
       {a, b},
       map2(a, b, [](double x, double y) { return double(x != y); }),
       false},
      {"cast_bool_int32_to_float32",
       [](const Ts& in) {
         return (in[0] > in[1]).cast(tpf::float32) +
                (in[0] * 4.0).cast(tpf::int32).cast(tpf::float32);
       },
       {a, b},
       tpf::tensor({{2.f, -5.f, 9.f}, {7.f, 1.f, -3.f}}),
       false},
      {"int32_arithmetic_logic",
       [](const Ts& in) {
         return ((in[0] * 3 - in[1]) > in[1]) && !(in[0] == in[1]);
       },
       {i32, tpf::tensor({int32_t{4}})},
       tpf::tensor({{false, true}, {false, false}}),
       false},
      {"int64_abs_sign",
       [](const Ts& in) {
         return tpf::abs(in[0] * 3 - in[1]) + tpf::sign(in[0]);
       },
       {i32.cast(tpf::int64), tpf::tensor({int64_t{4}})},
       tpf::tensor({{int64_t{2}, int64_t{12}}, {int64_t{9}, int64_t{9}}}),
       false},
  };
  for (const auto& c : cases) testing::run_op_case(c);
}

TEST_CASE("comparisons and logical ops give bool tensors") {
  const tpf::Tensor a = tpf::tensor({1, 2, 3}), b = tpf::tensor({3, 2, 1});
  CHECK((a < b).dtype() == tpf::bool_);
  CHECK((a < b).to_vector<int>() == std::vector<int>{1, 0, 0});
  CHECK((a <= b).to_vector<int>() == std::vector<int>{1, 1, 0});
  CHECK((a == b).to_vector<int>() == std::vector<int>{0, 1, 0});
  CHECK((a != b).to_vector<int>() == std::vector<int>{1, 0, 1});
  CHECK((a > b).to_vector<int>() == std::vector<int>{0, 0, 1});
  CHECK((a >= b).to_vector<int>() == std::vector<int>{0, 1, 1});
  CHECK(((a < b) || (a > b)).to_vector<int>() == std::vector<int>{1, 0, 1});
  CHECK(((a <= b) && (a >= b)).to_vector<int>() == std::vector<int>{0, 1, 0});
  CHECK((!(a == b)).to_vector<int>() == std::vector<int>{1, 0, 1});
}

TEST_CASE("type promotion follows bool < int32 < int64 < float32 < float64") {
  const auto i32 = tpf::tensor({1, 2}),
             i64 = tpf::tensor({int64_t{1}, int64_t{2}});
  const auto f32 = tpf::tensor({1.f, 2.f}), f64 = tpf::tensor({1.0, 2.0});
  const auto b = tpf::tensor({true, false});
  CHECK((i32 + i64).dtype() == tpf::int64);
  CHECK((i64 + f32).dtype() == tpf::float32);
  CHECK((f32 + f64).dtype() == tpf::float64);
  CHECK((b + b).dtype() == tpf::int32);
  CHECK((i32 / i32).dtype() == tpf::float32);
  CHECK(tpf::exp(i32).dtype() == tpf::float32);
  CHECK((i32 * 2.5).dtype() == tpf::float32);
  CHECK((i32 * 2.0).dtype() == tpf::int32);
  CHECK((i32 * 3.0).to_vector<int>() == std::vector<int>{3, 6});
  CHECK(tpf::abs(tpf::tensor({-3, 4})).to_vector<int>() ==
        std::vector<int>{3, 4});
}

TEST_CASE("elementwise errors name the op and both shapes") {
  const auto a = tpf::ones({2, 3}), b = tpf::ones({4});
  CHECK_THROWS_AS(a + b, tpf::ShapeError);
  try {
    (void)tpf::mul(a, b);
  } catch (const tpf::ShapeError& e) {
    const std::string msg = e.what();
    CHECK(msg.rfind("[mul]", 0) == 0);
    CHECK(msg.find("(2, 3)") != std::string::npos);
    CHECK(msg.find("(4,)") != std::string::npos);
  }
  CHECK_THROWS_WITH_AS(tpf::clip(a, 1.0, -1.0),
                       "[clip] expected lo <= hi, got lo = 1 > hi = -1",
                       tpf::ValueError);
  // Tensor bounds crossed at one element: silently hi there before.
  const auto lo = tpf::tensor({0.0, 5.0, 0.0}),
             hi = tpf::tensor({1.0, 2.0, 1.0});
  CHECK_THROWS_WITH_AS(tpf::clip(tpf::ones({2, 3}, tpf::float64), lo, hi),
                       "[clip] expected lo <= hi, got lo = 5 > hi = 2 at flat "
                       "index 1 of (3,)",
                       tpf::ValueError);
  CHECK_THROWS_WITH_AS(
      tpf::clip(a, tpf::ones({2}), hi),
      "[clip] expected broadcastable shapes, got (2,) and (3,)",
      tpf::ShapeError);
  CHECK(tpf::clip(tpf::tensor({-3.0, 0.5, 3.0}), tpf::tensor({-1.0, 1.0, 0.0}),
                  hi)
            .to_vector<double>() == std::vector<double>{-1.0, 1.0, 1.0});
  CHECK_THROWS_AS(tpf::add(a, tpf::Tensor()), tpf::ValueError);
}

TEST_CASE("degenerate inputs: OpCase rows") {
  using testing::degenerate;
  using testing::kNan;
  using testing::zeros64;
  const std::vector<OpCase> cases = {
      degenerate(
          "add_empty_broadcast", [](const Ts& in) { return in[0] + in[1]; },
          {zeros64({0, 3}), uniform64({3})}, zeros64({0, 3})),
      degenerate(
          "mul_zero_columns", [](const Ts& in) { return in[0] * in[1]; },
          {zeros64({2, 0}), uniform64({2, 1})}, zeros64({2, 0})),
      degenerate(
          "exp_empty", [](const Ts& in) { return tpf::exp(in[0]); },
          {zeros64({0})}, zeros64({0})),
      degenerate(
          "maximum_nan_either_side",
          [](const Ts& in) { return tpf::maximum(in[0], in[1]); },
          {tpf::tensor({kNan, 1.0, 2.0}), tpf::tensor({0.0, kNan, 1.0})},
          tpf::tensor({kNan, kNan, 2.0})),
      degenerate(
          "minimum_nan_either_side",
          [](const Ts& in) { return tpf::minimum(in[0], in[1]); },
          {tpf::tensor({kNan, 1.0, 2.0}), tpf::tensor({0.0, kNan, 1.0})},
          tpf::tensor({kNan, kNan, 1.0})),
      degenerate(
          "relu_keeps_nan", [](const Ts& in) { return tpf::relu(in[0]); },
          {tpf::tensor({kNan, -1.0, 2.0})}, tpf::tensor({kNan, 0.0, 2.0})),
      degenerate(
          "clip_keeps_nan",
          [](const Ts& in) { return tpf::clip(in[0], -1.0, 1.0); },
          {tpf::tensor({kNan, -3.0, 0.5})}, tpf::tensor({kNan, -1.0, 0.5})),
  };
  for (const auto& c : cases) testing::run_op_case(c);
}
