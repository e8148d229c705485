// Elementwise math against the C++ standard library on special values:
// zeros of both signs, subnormals, huge values, infinities and NaN, placed
// so that each lands in a vector batch and in the scalar tail (xsimd's batch
// math and std's scalar math once disagreed there).
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "support/check.hpp"

TEST_CASE("pow follows std::pow on every special value, at every position") {
  // Zeros of both signs, +-1, subnormals, huge and tiny values, infinities
  // and NaN, each against each: 484 pairs, so that special lanes share
  // vector batches with ordinary ones and land in the scalar tail too.
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<double> v = {
      0.0,    -0.0, 1.0,   -1.0, 2.0,  -2.0, 0.5, -0.5, 3.0,   -3.0,  1e-40,
      -1e-40, 1e30, -1e30, inf,  -inf, NAN,  2.5, -2.5, 1e-20, 100.0, -7.0};
  std::vector<double> base, exponent;
  for (double x : v)
    for (double y : v) base.push_back(x), exponent.push_back(y);
  // Then every value squared: whole batches of the exponent 2, which the
  // CPU computes as x * x.
  for (double x : v) base.push_back(x), exponent.push_back(2.0);
  const tpf::Shape shape{static_cast<int64_t>(base.size())};
  for (tpf::DType dt : {tpf::float32, tpf::float64}) {
    CAPTURE(dt);
    const auto got = tpf::pow(tpf::cast(tpf::from_vector(base, shape), dt),
                              tpf::cast(tpf::from_vector(exponent, shape), dt))
                         .to_vector<double>();
    for (size_t i = 0; i < base.size(); ++i) {
      double want;
      if (dt == tpf::float32) {
        const float a = static_cast<float>(base[i]);
        const float b = static_cast<float>(exponent[i]);
        want = std::pow(a, b);
      } else {
        want = std::pow(base[i], exponent[i]);
      }
      CAPTURE(base[i]);
      CAPTURE(exponent[i]);
      if (std::isnan(want) || std::isinf(want) || want == 0) {
        CHECK((std::isnan(got[i]) ? std::isnan(want) : got[i] == want));
        CHECK(std::signbit(got[i]) == std::signbit(want));
      } else {
        CHECK(std::fabs(got[i] - want) <=
              (dt == tpf::float32 ? 0x1p-23 : 1e-13) * std::fabs(want));
      }
    }
  }
}

TEST_CASE("pow(x, 2) is square(x) bit for bit at every length and position") {
  // Exact ties such as (1 + 2^-12)^2, where glibc's pow and x * x differ:
  // lengths 1-40 put each value in vector batches of any width and in the
  // scalar tail.
  std::vector<double> v;
  for (int i = 0; i < 40; ++i)
    v.push_back(1.0 + std::ldexp(double(i + 1), -12));
  for (tpf::DType dt : {tpf::float32, tpf::float64}) {
    CAPTURE(dt);
    for (size_t n = 1; n <= v.size(); ++n) {
      CAPTURE(n);
      const tpf::Shape shape{static_cast<int64_t>(n)};
      const tpf::Tensor x =
          tpf::cast(tpf::from_vector(
                        std::vector<double>(v.begin(), v.begin() + n), shape),
                    dt);
      const tpf::Tensor two =
          tpf::cast(tpf::from_vector(std::vector<double>(n, 2.0), shape), dt);
      CHECK(tpf::pow(x, two).to_vector<double>() ==
            tpf::square(x).to_vector<double>());
    }
  }
}

TEST_CASE("unary math follows std on special values, at every position") {
  // Zeros of both signs, subnormals, huge values, infinities, NaN and the
  // edges of exp's range, three times over in vector batches, then each
  // alone (the scalar path). Tolerances: 4 ulp in float, 64 in double
  // (xsimd's double erf is ~10 ulp off); exp's float results below the
  // smallest normal (x < -87.3) are flushed to zero and are left out.
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> v = {0.0,    -0.0,  1.0,    -1.0,   0.5,  -0.5,    2.0,
                           -2.0,   1e-40, -1e-40, 1e-310, 1e30, -1e30,   1e300,
                           -1e300, inf,   -inf,   NAN,    88.0, 89.0,    -80.0,
                           -104.0, 709.0, 710.0,  -745.0, 1e-8, 3.14159, 10.0,
                           -10.0,  20.0,  1e-20,  0.25,   0.125};
  const size_t distinct = v.size();
  for (int copy = 0; copy < 2; ++copy)
    v.insert(v.end(), v.begin(), v.begin() + distinct);
  using Fn = tpf::Tensor (*)(const tpf::Tensor&);
  struct Unary {
    const char* name;
    Fn op;
    double (*ref)(double);
  };
  const Unary ops[] = {
      {"exp", tpf::exp, [](double x) { return std::exp(x); }},
      {"log", tpf::log, [](double x) { return std::log(x); }},
      {"sqrt", tpf::sqrt, [](double x) { return std::sqrt(x); }},
      {"sin", tpf::sin, [](double x) { return std::sin(x); }},
      {"cos", tpf::cos, [](double x) { return std::cos(x); }},
      {"tanh", tpf::tanh, [](double x) { return std::tanh(x); }},
      {"expm1", tpf::expm1, [](double x) { return std::expm1(x); }},
      {"log1p", tpf::log1p, [](double x) { return std::log1p(x); }},
      {"erf", tpf::erf, [](double x) { return std::erf(x); }},
      {"abs", tpf::abs, [](double x) { return std::fabs(x); }},
  };
  const tpf::Shape shape{static_cast<int64_t>(v.size())};
  for (tpf::DType dt : {tpf::float32, tpf::float64}) {
    const tpf::Tensor x = tpf::cast(tpf::from_vector(v, shape), dt);
    const std::vector<double> xs = x.to_vector<double>();
    for (const Unary& u : ops) {
      CAPTURE(dt);
      const std::string name = u.name;
      CAPTURE(name);
      const bool f32 = dt == tpf::float32;
      const auto check = [&](double in, double got) {
        const double want = f32 ? double(float(u.ref(float(in)))) : u.ref(in);
        if (f32 && u.op == tpf::exp && std::fabs(want) < 0x1p-126 && want != 0)
          return;
        CAPTURE(in);
        if (std::isnan(want)) {
          CHECK(std::isnan(got));
        } else if (std::isinf(want) || want == 0) {
          CHECK(got == want);
          CHECK(std::signbit(got) == std::signbit(want));
        } else {
          CHECK(std::fabs(got - want) <=
                (f32 ? 0x1p-21 : 0x1p-46) * std::fabs(want) +
                    (f32 ? 0x1p-149 : 0x1p-1074));
        }
      };
      const std::vector<double> got = u.op(x).to_vector<double>();
      for (size_t i = 0; i < xs.size(); ++i) check(xs[i], got[i]);
      // Each value alone: the scalar path, whatever the vector width.
      for (size_t i = 0; i < distinct; ++i)
        check(xs[i], u.op(tpf::slice(x, {int64_t(i)}, {1})).item<double>());
    }
  }
}

TEST_CASE("div and pow meet an integer operand in the other's float64") {
  // 2^24 + 1 and 3037000500 have no float32; an odd exponent rounded to
  // float32 becomes even and flips the sign of a negative base's power.
  const auto big =
      tpf::from_vector(std::vector<int64_t>{3037000500, 16777217}, {2});
  CHECK(tpf::div(big, tpf::scalar(1.0, tpf::float64)).to_vector<double>() ==
        std::vector<double>{3037000500.0, 16777217.0});
  CHECK(tpf::div(big, tpf::scalar(1.0, tpf::float64)).dtype() == tpf::float64);
  const auto odd = tpf::from_vector(std::vector<int32_t>{16777217}, {1});
  CHECK(tpf::div(tpf::scalar(1.0, tpf::float64), odd).item<double>() ==
        1.0 / 16777217.0);
  CHECK(tpf::pow(tpf::scalar(-2.0, tpf::float64), odd).item<double>() ==
        -std::numeric_limits<double>::infinity());
  // Two integers still divide in float32, as in TensorFlow's truediv.
  CHECK(tpf::div(odd, odd).dtype() == tpf::float32);
}

TEST_CASE("max pooling a window of -inf is -inf on every kernel") {
  // oneDNN starts its max from the lowest finite float; the direct loops and
  // the 2x2 kernel from -inf. Windows 1, 2 and 3, float32 and float64.
  const float minus_inf = -std::numeric_limits<float>::infinity();
  for (int64_t k : {1, 2, 3})
    for (tpf::DType dt : {tpf::float32, tpf::float64}) {
      CAPTURE(k);
      CAPTURE(dt);
      const auto x = tpf::cast(tpf::fill({1, 6, 6, 6}, minus_inf), dt);
      for (const char* layout : {"NCHW", "NHWC"}) {
        const auto y = tpf::nn::max_pool2d(
            x, {.ksize = {k, k}, .strides = {k, k}, .data_format = layout});
        for (double v : y.to_vector<double>()) CHECK(v == minus_inf);
      }
    }
}

TEST_CASE("softsign of integer extremes keeps the sign") {
  const auto x = tpf::from_vector(
      std::vector<int32_t>{std::numeric_limits<int32_t>::max(),
                           std::numeric_limits<int32_t>::min(), 5},
      {3});
  const auto y = tpf::nn::softsign(x).to_vector<double>();
  CHECK(y[0] == doctest::Approx(1.0));
  CHECK(y[1] == doctest::Approx(-1.0));
  CHECK(y[2] == doctest::Approx(5.0 / 6.0));
}
