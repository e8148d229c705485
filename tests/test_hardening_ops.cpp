// Hostile but realistic arguments to tensor ops, and edge cases TensorFlow
// answers: each gives TF's value or a tapeflow::Error naming the op the user
// called (never NaN dropped, a byte other than 0/1 in a bool, a conversion
// that is undefined behaviour, a wrapped extent, a hang over an empty
// tensor's 2^64 slots, or a bare std::bad_alloc).
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "support/check.hpp"

using testing::expect_error;
namespace str = tpf::strings;
using Strings = std::vector<std::string>;

namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr int64_t kTop = std::numeric_limits<int64_t>::max();
}  // namespace

TEST_CASE("sign keeps NaN, as TensorFlow and NumPy") {
  for (tpf::DType dtype : {tpf::float32, tpf::float64}) {
    CAPTURE(tpf::dtype_name(dtype));
    const auto s = tpf::sign(tpf::tensor({kNaN, -2.0, 0.0, 3.0}).cast(dtype))
                       .to_vector<double>();
    CHECK(std::isnan(s[0]));
    CHECK(s[1] == -1.0);
    CHECK(s[2] == 0.0);
    CHECK(s[3] == 1.0);
    // The vectorized path too: more elements than one SIMD register.
    std::vector<double> many(37, kNaN);
    many[5] = -4.0;
    const auto v =
        tpf::sign(tpf::from_vector(many, {37}).cast(dtype)).to_vector<double>();
    for (size_t i = 0; i < v.size(); ++i) {
      CAPTURE(i);
      if (i == 5)
        CHECK(v[i] == -1.0);
      else
        CHECK(std::isnan(v[i]));
    }
  }
}

TEST_CASE("one_hot: a bool holds 0 or 1, an integer dtype only what fits") {
  const auto idx = tpf::tensor<int64_t>({0, 1});
  const auto h = tpf::one_hot(idx, 2, 2.0, 0.0, tpf::bool_);
  CHECK(tpf::sum(h).item<int64_t>() == 2);
  CHECK(tpf::cast(h, tpf::int32).to_vector<int>() ==
        std::vector<int>{1, 0, 0, 1});
  CHECK(tpf::one_hot(idx, 2, -3.0, 7.0, tpf::int32).to_vector<int>() ==
        std::vector<int>{-3, 7, 7, -3});
  expect_error<tpf::ValueError>(
      [&] { (void)tpf::one_hot(idx, 2, 1e20, 0.0, tpf::int32); },
      "[one_hot] expected a value representable in int32, got 1e+20");
  expect_error<tpf::ValueError>(
      [&] { (void)tpf::one_hot(idx, 2, 1.0, kNaN, tpf::int64); },
      "[one_hot] expected a value representable in int64, got nan");
  expect_error<tpf::ShapeError>(
      [] {
        (void)tpf::one_hot(tpf::zeros({1, 1, 1, 1, 1, 1, 1, 1}, tpf::int32), 2);
      },
      "[one_hot] expected indices of rank < 8, got (1, 1, 1, 1, 1, 1, 1, 1)");
}

TEST_CASE("host values an integer cannot hold are refused, not converted") {
  expect_error<tpf::ValueError>(
      [] { (void)tpf::scalar(kNaN).item<int>(); },
      "[to_vector] expected values a 32-bit signed integer can hold, got nan");
  expect_error<tpf::ValueError>(
      [] { (void)tpf::scalar(1e30, tpf::float64).item<int64_t>(); },
      "[to_vector] expected values a 64-bit signed integer can hold, got "
      "1e+30");
  expect_error<tpf::ValueError>(
      [] {
        (void)tpf::tensor({1.0, -1.0}).to_vector<uint32_t>();
      },
      "[to_vector] expected values a 32-bit unsigned integer can hold, got -1");
  // What truncates into the range converts, as C++ defines it.
  CHECK(tpf::tensor({-2147483648.5, 2147483647.9}).to_vector<int32_t>() ==
        std::vector<int32_t>{INT32_MIN, INT32_MAX});
  CHECK(tpf::tensor({-0.5}).to_vector<uint32_t>() == std::vector<uint32_t>{0});
  // Integers too: an int64 value past int32 is refused, not wrapped.
  expect_error<tpf::ValueError>(
      [] { (void)tpf::tensor<int64_t>({int64_t{1} << 40}).item<int>(); },
      "[to_vector] expected values a 32-bit signed integer can hold, got "
      "1099511627776");
  expect_error<tpf::ValueError>(
      [] { (void)tpf::tensor<int64_t>({-1}).to_vector<uint64_t>(); },
      "[to_vector] expected values a 64-bit unsigned integer can hold, got -1");
  CHECK(tpf::tensor<int64_t>({INT32_MIN, INT32_MAX}).to_vector<int32_t>() ==
        std::vector<int32_t>{INT32_MIN, INT32_MAX});
  CHECK(tpf::scalar(kNaN).item<bool>());
}

TEST_CASE("extents that would wrap, and empty tensors of huge extents") {
  const auto wide = tpf::zeros({0, kTop});
  expect_error<tpf::ValueError>(
      [&] {
        (void)tpf::concat({wide, wide, wide}, 1);
      },
      "[concat] expected the concatenated extent to fit in int64");
  // join over an axis of 0 strings: the output exists (one "" each) or is
  // refused for its size, and no loop walks the 2^64 outputs.
  expect_error<tpf::ValueError>(
      [] {
        (void)str::join(
            tpf::from_strings({}, {int64_t{1} << 32, 0, int64_t{1} << 32}), ",",
            1);
      },
      "[join] expected a shape whose element count fits in int64");
  expect_error<tpf::ResourceExhaustedError>(
      [] {
        (void)str::join(tpf::from_strings({}, {int64_t{1} << 50, 0}), ",", 1);
      },
      "[join]");
  CHECK(str::join(tpf::from_strings({}, {3, 0}), ",", 1).to_strings() ==
        Strings{"", "", ""});
  CHECK(str::join(tpf::from_strings({}, {0, 5}), ",", 1).shape() ==
        tpf::Shape{0});
  expect_error<tpf::ValueError>(
      [] {
        (void)tpf::unstack(tpf::zeros({int64_t{1} << 40, 0}));
      },
      "[unstack] expected at most 1048576 parts of an empty tensor, got "
      "1099511627776");
  CHECK(tpf::unstack(tpf::zeros({3, 0})).size() == 3);
}

TEST_CASE("argmax and argmin refuse an empty axis, the output empty or not") {
  for (const tpf::Shape& shape : {tpf::Shape{0, 0}, tpf::Shape{0, 3}}) {
    CAPTURE(shape.str());
    expect_error<tpf::ShapeError>(
        [&] { (void)tpf::argmax(tpf::zeros(shape), 0); },
        "[argmax] expected a non-empty axis, got axis 0 of shape");
    expect_error<tpf::ShapeError>(
        [&] { (void)tpf::argmin(tpf::zeros(shape), 0); },
        "[argmin] expected a non-empty axis, got axis 0 of shape");
  }
  // A non-empty axis of an empty tensor has an (empty) answer.
  CHECK(tpf::argmax(tpf::zeros({0, 3}), 1).shape() == tpf::Shape{0});
}

TEST_CASE("random_uniform never returns maxval, however coarse the dtype") {
  // A float32 in [1e6, 1e6 + 1) can be one of 16 values; a float64 in
  // [2^52, 2^52 + 1) only 2^52 itself. Rounding once may land on maxval.
  const auto f32 = tpf::stateless_random_uniform({1 << 16}, 7, 1e6, 1e6 + 1);
  CHECK(tpf::max(f32).item<double>() < 1e6 + 1);
  CHECK(tpf::min(f32).item<double>() >= 1e6);
  const double big = 4503599627370496.0;  // 2^52
  const auto f64 =
      tpf::stateless_random_uniform({4096}, 7, big, big + 1, tpf::float64);
  CHECK(tpf::max(f64).item<double>() == big);
  const auto wide = tpf::random_uniform({1 << 16}, 1000.0, 1001.0);
  CHECK(tpf::max(wide).item<double>() < 1001.0);
}

TEST_CASE("strings: substr and to_number as TensorFlow reads them") {
  const auto hello = tpf::constant("hello");
  CHECK(str::substr(hello, -2, 1).to_strings() == Strings{"l"});
  CHECK(str::substr(hello, 1, -1).to_strings() == Strings{"ello"});
  CHECK(str::substr(hello, -5, 2).to_strings() == Strings{"he"});
  CHECK(str::substr(hello, 5, 3).to_strings() == Strings{""});
  expect_error<tpf::IndexError>(
      [&] { (void)str::substr(hello, -6, 1); },
      "[substr] expected pos in [-5, 5] for the string's 5 bytes, got -6");
  expect_error<tpf::IndexError>([&] { (void)str::substr(hello, 6, 1); },
                                "[substr] expected pos in [-5, 5]");

  const auto floats =
      str::to_number(
          tpf::from_strings({" 1", "1 ", "+1.5", "-0x10", "1e39", "-1e39",
                             "1e-50", "INF", "-nan", "\t2.5e1\n"},
                            {10}),
          tpf::float32)
          .to_vector<double>();
  const double inf = std::numeric_limits<double>::infinity();
  CHECK(floats[0] == 1.0);
  CHECK(floats[1] == 1.0);
  CHECK(floats[2] == 1.5);
  CHECK(floats[3] == -16.0);
  CHECK(floats[4] == inf);
  CHECK(floats[5] == -inf);
  CHECK(floats[6] == 0.0);
  CHECK(floats[7] == inf);
  CHECK(std::isnan(floats[8]));
  CHECK(floats[9] == 25.0);
  CHECK(str::to_number(tpf::constant("1e400"), tpf::float64).item<double>() ==
        inf);
  CHECK(str::to_number(tpf::constant("-1e-400"), tpf::float64).item<double>() ==
        0.0);
  CHECK(str::to_number(tpf::from_strings({" 7", "+7", "-2147483648"}, {3}),
                       tpf::int32)
            .to_vector<int>() == std::vector<int>{7, 7, INT32_MIN});
  for (const char* bad :
       {"", " ", "+", "--1", "+-1", "1 2", "0x", "abc", "0x-1", "-0x-1",
        "0xinf", "0x1p3", "0x.8", "infinity", "nan(1)"}) {
    CAPTURE(bad);
    expect_error<tpf::ValueError>(
        [&] { (void)str::to_number(tpf::constant(bad), tpf::float64); },
        "[to_number] expected a number, got");
  }
  expect_error<tpf::ValueError>(
      [] { (void)str::to_number(tpf::constant("0x10"), tpf::int32); },
      "[to_number] expected a number, got \"0x10\"");
  expect_error<tpf::ValueError>(
      [] { (void)str::to_number(tpf::constant(" 3000000000 "), tpf::int32); },
      "[to_number] expected a number that fits, got \" 3000000000 \"");
}

TEST_CASE("errors name the op called, and the real reason") {
  expect_error<tpf::ShapeError>(
      [] {
        (void)tpf::expand_dims(tpf::zeros({1, 1, 1, 1, 1, 1, 1, 1}), 0);
      },
      "[expand_dims] expected a tensor of rank < 8, got shape");
  expect_error<tpf::DTypeError>(
      [] {
        (void)tpf::stack({tpf::ones({2}), tpf::ones({2}, tpf::int32)});
      },
      "[stack] ");
  expect_error<tpf::ShapeError>(
      [] {
        (void)tpf::reshape(tpf::zeros({0, 3}), {-1, 0});
      },
      "[reshape] expected a -1 extent beside non-zero extents only");
  expect_error<tpf::ShapeError>(
      [] {
        (void)tpf::reshape(tpf::zeros({5}), {-1, 2});
      },
      "[reshape] expected a shape with 5 elements (input (5,)), got (-1, 2)");
  expect_error<tpf::ShapeError>(
      [] {
        (void)str::join({tpf::from_strings({"a", "b"}, {2}),
                         tpf::from_strings({"a", "b", "c"}, {3})});
      },
      "[join] ");
}
