// floor, ceil, round, floordiv, floormod, atan2 (OpCase rows), their special
// values and integer semantics on every device, float classification
// (is_nan, is_inf, is_finite), count_nonzero / any / all, and errors.
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>

#include "support/check.hpp"
#include "support/device.hpp"

using testing::all_devices;
using testing::kNan;
using testing::map1;
using testing::map2;
using testing::OpCase;
using Ts = std::vector<tpf::Tensor>;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

/** Python's floor division and remainder, for values where x / y is exact
 * enough (the OpCase rows' dyadic inputs). */
double py_floordiv(double x, double y) {
  return std::floor(x / y);
}
double py_floormod(double x, double y) {
  return x - std::floor(x / y) * y;
}

/** Python's floor remainder in T over std::fmod (TensorFlow's sign of 0). */
template <class T>
double tapeflow_test_floor_mod(double xd, double yd) {
  const T x = T(xd), y = T(yd), r = std::fmod(x, y);
  return r != T(0) && ((r < T(0)) != (y < T(0))) ? r + y : r;
}
/** Python's float floor division in T (Objects/floatobject.c). */
template <class T>
double tapeflow_test_floor_div(double xd, double yd) {
  const T x = T(xd), y = T(yd);
  if (y == T(0)) return x / y;
  const T mod = std::fmod(x, y);
  T div = (x - mod) / y;
  if (mod != T(0) && ((y < T(0)) != (mod < T(0)))) div -= T(1);
  if (div == T(0)) return std::copysign(T(0), x / y);
  T whole = std::floor(div);
  if (div - whole > T(0.5)) whole += T(1);
  return whole;
}

/** No whole number and no tie in reach of a finite difference. */
tpf::Tensor between_wholes() {
  return tpf::tensor({{0.3, -1.7, 2.6}, {1.2, -0.4, 3.9}});
}
/** Dyadic, so float32 holds them exactly; no quotient is a whole number. */
tpf::Tensor dividends() {
  return tpf::tensor({{0.5, -1.25, 2.25}, {1.75, 0.25, -3.5}});
}
tpf::Tensor divisors() {
  return tpf::tensor({0.75, -2.0, 1.5});
}

/** `values` (float64) on `device` in `dtype`. */
tpf::Tensor on(const tpf::Device& device, std::vector<double> values,
               tpf::DType dtype = tpf::float64) {
  const int64_t n = static_cast<int64_t>(values.size());
  return tpf::from_vector(values, {n}).cast(dtype).to(device);
}

/** Equal values, NaN matching NaN and the sign of zero compared. */
void check_same(const tpf::Tensor& got, const std::vector<double>& want) {
  const auto v = got.to_vector<double>();
  REQUIRE(v.size() == want.size());
  for (size_t i = 0; i < v.size(); ++i) {
    CAPTURE(i);
    CAPTURE(v[i]);
    CAPTURE(want[i]);
    if (std::isnan(want[i])) {
      CHECK(std::isnan(v[i]));
    } else {
      CHECK(v[i] == want[i]);
      CHECK(std::signbit(v[i]) == std::signbit(want[i]));
    }
  }
}

}  // namespace

TEST_CASE("rounding and floor division: forward, strided, float32, gradcheck") {
  const tpf::Tensor x = between_wholes();
  const auto unary = [](const char* name, tpf::Tensor (*f)(const tpf::Tensor&),
                        double (*ref)(double), tpf::Tensor in) {
    return OpCase{
        name, [f](const Ts& t) { return f(t[0]); }, {in}, map1(in, ref)};
  };
  const auto binary =
      [](const char* name,
         tpf::Tensor (*f)(const tpf::Tensor&, const tpf::Tensor&),
         double (*ref)(double, double), tpf::Tensor a, tpf::Tensor b) {
        return OpCase{name,
                      [f](const Ts& t) { return f(t[0], t[1]); },
                      {a, b},
                      map2(a, b, ref)};
      };
  const std::vector<OpCase> cases = {
      unary(
          "floor", tpf::floor, [](double v) { return std::floor(v); }, x),
      unary(
          "ceil", tpf::ceil, [](double v) { return std::ceil(v); }, x),
      unary(
          "round", tpf::round, [](double v) { return std::nearbyint(v); }, x),
      binary("floordiv", tpf::floordiv, py_floordiv, dividends(), divisors()),
      binary("floormod", tpf::floormod, py_floormod, dividends(), divisors()),
      // Every quadrant: the divisor row holds both signs.
      binary(
          "atan2", tpf::atan2,
          [](double y, double v) { return std::atan2(y, v); }, dividends(),
          tpf::tensor({0.75, -2.0, -1.5})),
      {"floormod_by_a_scalar",
       [](const Ts& t) {
         return tpf::floormod(t[0], tpf::scalar_like(t[0], 2.5));
       },
       {dividends()},
       map1(dividends(), [](double v) { return py_floormod(v, 2.5); })},
  };
  for (const auto& c : cases) testing::run_op_case(c);
}

TEST_CASE("round ties to even; rounding keeps -0, infinities and NaN") {
  const std::vector<double> in = {0.5,  1.5,  2.5,   -0.5, -2.5,  3.5,
                                  -0.0, kInf, -kInf, kNan, 1e300, -7.25};
  for (const tpf::Device& device : all_devices()) {
    CAPTURE(device.str());
    for (const tpf::DType dtype : {tpf::float32, tpf::float64}) {
      CAPTURE(tpf::dtype_name(dtype));
      std::vector<double> values = in;
      if (dtype == tpf::float32) values[10] = 8388609.0;  // 2^23 + 1
      const tpf::Tensor t = on(device, values, dtype);
      const double big = values[10];
      check_same(tpf::round(t), {0.0, 2.0, 2.0, -0.0, -2.0, 4.0, -0.0, kInf,
                                 -kInf, kNan, big, -7.0});
      check_same(tpf::floor(t), {0.0, 1.0, 2.0, -1.0, -3.0, 3.0, -0.0, kInf,
                                 -kInf, kNan, big, -8.0});
      check_same(tpf::ceil(t), {1.0, 2.0, 3.0, -0.0, -2.0, 4.0, -0.0, kInf,
                                -kInf, kNan, big, -7.0});
    }
  }
}

TEST_CASE("float floordiv and floormod follow Python at the edges") {
  // x, y, x // y, x % y as Python 3 computes them, and as NumPy where Python
  // raises (a zero divisor); floormod's zero keeps the sign fmod gives it, as
  // in TensorFlow and PyTorch.
  struct Row {
    double x, y, div, mod;
  };
  const std::vector<Row> rows = {
      {1.0, 0.1, 9.0, 0.09999999999999995},  // floor(1 / 0.1) would be 10
      {-1.0, 0.1, -10.0, 5.551115123125783e-17},
      {7.0, -2.0, -4.0, -1.0},
      {-7.0, 2.0, -4.0, 1.0},
      {-7.0, -2.0, 3.0, -1.0},
      {6.0, 3.0, 2.0, 0.0},
      {-0.0, 3.0, -0.0, -0.0},
      {5.0, 0.0, kInf, kNan},
      {-5.0, 0.0, -kInf, kNan},
      {0.0, 0.0, kNan, kNan},
      {kInf, 1.0, kNan, kNan},
      {1.0, kInf, 0.0, 1.0},
      {-1.0, kInf, -1.0, kInf},
      {kNan, 2.0, kNan, kNan},
      {1e308, 1e-308, kInf, 3.498445546245627e-309},
  };
  std::vector<double> xs, ys, divs, mods;
  for (const Row& r : rows) {
    xs.push_back(r.x), ys.push_back(r.y);
    divs.push_back(r.div), mods.push_back(r.mod);
  }
  for (const tpf::Device& device : all_devices()) {
    CAPTURE(device.str());
    const tpf::Tensor x = on(device, xs), y = on(device, ys);
    check_same(tpf::floordiv(x, y), divs);
    check_same(tpf::floormod(x, y), mods);
  }
}

TEST_CASE("float floordiv and floormod: vector lanes equal std::fmod's bits") {
  // Contiguous rows go through the CPU's vector fmod (fma remainder), a
  // strided view lane by lane through std::fmod: every bit must agree,
  // and agree with Python's algorithm written here over std::fmod. Values
  // near whole-number quotients (a = k b and its neighbours), huge and tiny
  // quotients, subnormals, signed zeros, infinities and NaN.
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> mantissa(-1.0, 1.0);
  std::uniform_int_distribution<int> exponent(-30, 30), pick(0, 9);
  const std::vector<double> specials = {0.0,  -0.0,   kInf,    -kInf,
                                        kNan, 5e-324, -1e-310, 1e300};
  for (const tpf::DType dtype : {tpf::float32, tpf::float64}) {
    CAPTURE(tpf::dtype_name(dtype));
    const int64_t n = 20011;
    std::vector<double> xs(n), ys(n);
    std::uniform_int_distribution<int> multiple(-1000, 1000), step(-1, 1);
    const auto fill = [&](auto zero) {
      using T = decltype(zero);
      const T inf = std::numeric_limits<T>::infinity();
      for (int64_t i = 0; i < n; ++i) {
        const T y = T(std::ldexp(mantissa(rng), exponent(rng) / 3));
        T x = T(std::ldexp(mantissa(rng), exponent(rng)));
        if (pick(rng) < 5) {  // a whole multiple of y, or a neighbour of one
          x = T(multiple(rng)) * y;
          const int s = step(rng);
          if (s) x = std::nextafter(x, s * inf);
        }
        xs[i] = x, ys[i] = y;
      }
      // The specials sit at the end: a batch holding one goes to std::fmod
      // whole, so the rows before them are vector work.
      for (int64_t i = n - 512; i < n; ++i) {
        if (i % 2)
          ys[i] = specials[i % specials.size()];
        else
          xs[i] = specials[(i / 2) % specials.size()];
        xs[i] = T(xs[i]), ys[i] = T(ys[i]);
      }
    };
    if (dtype == tpf::float32)
      fill(0.0f);
    else
      fill(0.0);
    const tpf::Tensor x = tpf::from_vector(xs, {n}).cast(dtype);
    const tpf::Tensor y = tpf::from_vector(ys, {n}).cast(dtype);
    // (n, 2) with the pair side by side: column 0 is a stride-2 view.
    const tpf::Tensor pairs = tpf::stack({x, y}, 1);
    const tpf::Tensor xv = tpf::reshape(tpf::slice(pairs, {0, 0}, {n, 1}), {n});
    const tpf::Tensor yv = tpf::reshape(tpf::slice(pairs, {0, 1}, {n, 1}), {n});
    for (auto* f : {&tpf::floormod, &tpf::floordiv}) {
      const bool mod = f == &tpf::floormod;
      CAPTURE(mod);
      const auto vector_lanes = f(x, y).to_vector<double>();
      const auto scalar_lanes = f(xv, yv).to_vector<double>();
      int64_t bad = 0;
      for (int64_t i = 0; i < n; ++i) {
        double want;
        if (dtype == tpf::float32)
          want = mod ? tapeflow_test_floor_mod<float>(xs[i], ys[i])
                     : tapeflow_test_floor_div<float>(xs[i], ys[i]);
        else
          want = mod ? tapeflow_test_floor_mod<double>(xs[i], ys[i])
                     : tapeflow_test_floor_div<double>(xs[i], ys[i]);
        const auto same = [&](double v) {
          return std::isnan(want)
                     ? std::isnan(v)
                     : v == want && std::signbit(v) == std::signbit(want);
        };
        if (!same(vector_lanes[i]) || !same(scalar_lanes[i])) {
          if (bad++ < 5)
            MESSAGE(xs[i], " ", ys[i], ": vector ", vector_lanes[i],
                    ", scalar ", scalar_lanes[i], ", want ", want);
        }
      }
      CHECK(bad == 0);
    }
  }
}

TEST_CASE("integer floordiv and floormod: Python's signs, wrap, zero refused") {
  for (const tpf::Device& device : all_devices()) {
    CAPTURE(device.str());
    for (const tpf::DType dtype : {tpf::int32, tpf::int64}) {
      CAPTURE(tpf::dtype_name(dtype));
      const tpf::Tensor x = on(device, {7, -7, 7, -7, 0, 6, -1, 1}, dtype);
      const tpf::Tensor y = on(device, {2, 2, -2, -2, 5, 3, 4, -4}, dtype);
      const tpf::Tensor q = tpf::floordiv(x, y), r = tpf::floormod(x, y);
      CHECK(q.dtype() == dtype);
      CHECK(r.dtype() == dtype);
      CHECK(q.to_vector<int64_t>() ==
            std::vector<int64_t>{3, -4, -4, 3, 0, 2, -1, -1});
      CHECK(r.to_vector<int64_t>() ==
            std::vector<int64_t>{1, 1, -1, -1, 0, 0, 3, -3});
    }
    // int32 divides through double, int64 through idiv: random pairs over
    // the whole range agree.
    std::mt19937 rng(3);
    std::uniform_int_distribution<int32_t> any32(INT32_MIN, INT32_MAX),
        small(-9, 9);
    std::vector<int32_t> a32, b32;
    for (int i = 0; i < 4001; ++i) {
      a32.push_back(i % 7 ? any32(rng) : INT32_MIN);
      const int32_t b = i % 2 ? any32(rng) : small(rng);
      // (INT_MIN // -1 wraps in int32 alone: checked below.)
      b32.push_back(b == 0 || (b == -1 && a32.back() == INT32_MIN) ? 3 : b);
    }
    const tpf::Tensor a = tpf::from_vector(a32, {4001}).to(device),
                      b = tpf::from_vector(b32, {4001}).to(device);
    CHECK(tpf::floordiv(a, b).to_vector<int64_t>() ==
          tpf::floordiv(a.cast(tpf::int64), b.cast(tpf::int64))
              .to_vector<int64_t>());
    CHECK(tpf::floormod(a, b).to_vector<int64_t>() ==
          tpf::floormod(a.cast(tpf::int64), b.cast(tpf::int64))
              .to_vector<int64_t>());
    // INT_MIN // -1 wraps to INT_MIN (x86's idiv would trap), % -1 is 0.
    const auto lowest = std::numeric_limits<int64_t>::min();
    const tpf::Tensor m =
        tpf::from_vector(std::vector<int64_t>{lowest, lowest, 9}, {3})
            .to(device);
    const tpf::Tensor minus_one = tpf::full({3}, -1.0, tpf::int64, device);
    CHECK(tpf::floordiv(m, minus_one).to_vector<int64_t>() ==
          std::vector<int64_t>{lowest, lowest, -9});
    CHECK(tpf::floormod(m, minus_one).to_vector<int64_t>() ==
          std::vector<int64_t>{0, 0, 0});
    const tpf::Tensor m32 =
        tpf::from_vector(std::vector<int32_t>{INT32_MIN}, {1}).to(device);
    CHECK(tpf::floordiv(m32, tpf::full({1}, -1.0, tpf::int32, device))
              .item<int32_t>() == INT32_MIN);
    // A zero divisor is refused, naming where it is.
    testing::expect_error<tpf::ValueError>(
        [&] {
          tpf::floordiv(on(device, {1, 2, 3}, tpf::int32),
                        on(device, {1, 0, 2}, tpf::int32));
        },
        "[floordiv] expected nonzero divisors for int32 operands (output "
        "(3,)), got 0 at flat index 1 of the divisor (3,)");
    testing::expect_error<tpf::ValueError>(
        [&] {
          tpf::floormod(on(device, {1, 2}, tpf::int64),
                        tpf::scalar(0, tpf::int64, device));
        },
        "[floormod] expected nonzero divisors");
    // Bools compute as int32; an integer meets a float in the float.
    const tpf::Tensor t = tpf::tensor({true, false}).to(device);
    CHECK(tpf::floordiv(t, tpf::tensor({true, true}).to(device)).dtype() ==
          tpf::int32);
    const tpf::Tensor mixed =
        tpf::floormod(on(device, {-7, 7}, tpf::int32), on(device, {2.5, -2.5}));
    CHECK(mixed.dtype() == tpf::float64);
    check_same(mixed, {0.5, -0.5});
  }
}

TEST_CASE("integers and bools round to themselves") {
  const tpf::Tensor i = tpf::tensor<int64_t>({-3, 0, 9});
  for (auto* f : {&tpf::floor, &tpf::ceil, &tpf::round}) {
    const tpf::Tensor r = f(i);
    CHECK(r.dtype() == tpf::int64);
    CHECK(r.to_vector<int64_t>() == std::vector<int64_t>{-3, 0, 9});
    CHECK(f(tpf::tensor({true, false})).dtype() == tpf::bool_);
  }
}

TEST_CASE("atan2 at signed zeros, infinities and NaN, as std::atan2") {
  // Every pair of the specials, in batches and in scalar tails alike.
  const std::vector<double> specials = {0.0,   -0.0, 1.0,    -1.0, kInf,
                                        -kInf, kNan, 1e-300, 3e300};
  std::vector<double> ys, xs, want;
  for (double y : specials)
    for (double x : specials) {
      ys.push_back(y), xs.push_back(x);
      want.push_back(std::atan2(y, x));
    }
  for (const tpf::Device& device : all_devices()) {
    CAPTURE(device.str());
    const tpf::Tensor got = tpf::atan2(on(device, ys), on(device, xs));
    const auto v = got.to_vector<double>();
    for (size_t i = 0; i < v.size(); ++i) {
      CAPTURE(ys[i]);
      CAPTURE(xs[i]);
      if (std::isnan(want[i])) {
        CHECK(std::isnan(v[i]));
      } else {
        CHECK(v[i] == doctest::Approx(want[i]).epsilon(1e-15));
        CHECK(std::signbit(v[i]) == std::signbit(want[i]));
      }
    }
  }
}

TEST_CASE("atan2 agrees with std::atan2 over many values and layouts") {
  for (const tpf::DType dtype : {tpf::float32, tpf::float64}) {
    CAPTURE(tpf::dtype_name(dtype));
    const tpf::Tensor y = tpf::random_uniform({37, 29}, -4.0, 4.0, dtype);
    const tpf::Tensor x = tpf::random_uniform({29, 37}, -4.0, 4.0, dtype);
    const tpf::Tensor xt = tpf::transpose(x);  // strided against contiguous
    const auto got = tpf::atan2(y, xt).to_vector<double>();
    const auto vy = y.to_vector<double>(), vx = xt.to_vector<double>();
    const double tolerance = dtype == tpf::float32 ? 4e-7 : 1e-15;
    double worst = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      const double want = dtype == tpf::float32
                              ? double(std::atan2(float(vy[i]), float(vx[i])))
                              : std::atan2(vy[i], vx[i]);
      worst = std::max(
          worst, std::abs(got[i] - want) / std::max(std::abs(want), 1e-30));
    }
    CHECK(worst <= tolerance);
  }
}

TEST_CASE("is_nan, is_inf, is_finite on every device and dtype") {
  for (const tpf::Device& device : all_devices()) {
    CAPTURE(device.str());
    for (const tpf::DType dtype : {tpf::float32, tpf::float64}) {
      const tpf::Tensor t =
          on(device, {1.0, kNan, kInf, -kInf, -0.0, 1e-310}, dtype);
      CHECK(tpf::is_nan(t).dtype() == tpf::bool_);
      CHECK(tpf::is_nan(t).to_vector<bool>() ==
            std::vector<bool>{false, true, false, false, false, false});
      CHECK(tpf::is_inf(t).to_vector<bool>() ==
            std::vector<bool>{false, false, true, true, false, false});
      CHECK(tpf::is_finite(t).to_vector<bool>() ==
            std::vector<bool>{true, false, false, false, true, true});
    }
    const tpf::Tensor i = on(device, {3, -4}, tpf::int32);
    CHECK(tpf::is_nan(i).to_vector<bool>() == std::vector<bool>{false, false});
    CHECK(tpf::is_inf(i).to_vector<bool>() == std::vector<bool>{false, false});
    CHECK(tpf::is_finite(i).to_vector<bool>() == std::vector<bool>{true, true});
    CHECK(tpf::is_finite(i).device() == device);
  }
}

TEST_CASE("count_nonzero, any and all over axes, NaN and empty extents") {
  for (const tpf::Device& device : all_devices()) {
    CAPTURE(device.str());
    const tpf::Tensor x =
        tpf::tensor({{0.0, 2.0, kNan}, {0.0, 0.0, -0.0}}).to(device);
    CHECK(tpf::count_nonzero(x).dtype() == tpf::int64);
    CHECK(tpf::count_nonzero(x).item<int64_t>() == 2);  // NaN is nonzero
    CHECK(tpf::count_nonzero(x, {1}).to_vector<int64_t>() ==
          std::vector<int64_t>{2, 0});
    CHECK(tpf::count_nonzero(x, {0}, true).shape() == tpf::Shape{1, 3});
    CHECK(tpf::any(x, {1}).to_vector<bool>() == std::vector<bool>{true, false});
    CHECK(tpf::all(x, {0}).to_vector<bool>() ==
          std::vector<bool>{false, false, false});
    CHECK(tpf::any(x).dtype() == tpf::bool_);
    const tpf::Tensor b = tpf::tensor({{true, true}, {true, false}}).to(device);
    CHECK(tpf::all(b, {-1}, true).shape() == tpf::Shape{2, 1});
    CHECK(tpf::all(b, {-1}).to_vector<bool>() ==
          std::vector<bool>{true, false});
    CHECK_FALSE(tpf::all(b).item<bool>());
    CHECK(tpf::any(b).item<bool>());
    // Over no elements: any is false, all is true, the count 0.
    const tpf::Tensor none = tpf::zeros({2, 0}, tpf::int32, device);
    CHECK(tpf::any(none, {1}).to_vector<bool>() ==
          std::vector<bool>{false, false});
    CHECK(tpf::all(none, {1}).to_vector<bool>() ==
          std::vector<bool>{true, true});
    CHECK(tpf::count_nonzero(none).item<int64_t>() == 0);
  }
}

TEST_CASE("rounding, division and classification errors name the op") {
  const tpf::Tensor s = tpf::from_strings({"a", "b"}, {2});
  const tpf::Tensor x = tpf::tensor({1.0, 2.0});
  testing::expect_error<tpf::DTypeError>([&] { tpf::floor(s); }, "[floor]");
  testing::expect_error<tpf::DTypeError>([&] { tpf::round(s); }, "[round]");
  testing::expect_error<tpf::DTypeError>([&] { tpf::floordiv(s, x); },
                                         "[floordiv]");
  testing::expect_error<tpf::DTypeError>([&] { tpf::floormod(x, s); },
                                         "[floormod]");
  testing::expect_error<tpf::DTypeError>([&] { tpf::atan2(s, s); }, "[atan2]");
  testing::expect_error<tpf::DTypeError>([&] { tpf::is_nan(s); },
                                         "[is_nan] expected a numeric tensor");
  testing::expect_error<tpf::ShapeError>(
      [&] {
        tpf::floordiv(x, tpf::tensor({1.0, 2.0, 3.0}));
      },
      "[floordiv]");
  testing::expect_error<tpf::ShapeError>(
      [&] {
        tpf::atan2(x, tpf::tensor({1.0, 2.0, 3.0}));
      },
      "[atan2]");
  testing::expect_error<tpf::ValueError>([&] { tpf::any(x, {0, 0}); }, "[any]");
  testing::expect_error<tpf::DTypeError>([&] { tpf::count_nonzero(s); },
                                         "[count_nonzero]");
}
