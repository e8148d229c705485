// Hostile but realistic inputs: every one throws a tapeflow::Error naming the
// user's op (never a crash, a foreign exception or a wrapped size), or gives
// the result NumPy/TensorFlow give.
#include <cmath>
#include <cstdint>
#include <limits>
#include <sstream>

#include "support/check.hpp"

using testing::expect_error;

TEST_CASE("size arithmetic that would overflow is an error naming the op") {
  // 3 * 6148914691236517206 wraps to 2 in 64 bits.
  expect_error<tpf::ValueError>(
      [] {
        (void)tpf::reshape(tpf::tensor({1.f, 2.f}), {3, 6148914691236517206LL});
      },
      "[reshape] expected the element count to fit in int64");
  expect_error<tpf::IndexError>(
      [] {
        (void)tpf::slice(tpf::ones({2, 2}), {1, 1},
                         {1, std::numeric_limits<int64_t>::max()});
      },
      "[slice] expected begin + size within (2, 2)");
  expect_error<tpf::IndexError>(
      [] {
        (void)tpf::slice(tpf::ones({2, 2}),
                         {std::numeric_limits<int64_t>::max(), 0}, {-1, 1});
      },
      "[slice] expected begin + size within");
  expect_error<tpf::ValueError>(
      [] { (void)tpf::eye(int64_t{1} << 32, int64_t{1} << 32); },
      "[eye] expected a shape whose element count fits in int64");
  expect_error<tpf::ValueError>(
      [] { (void)tpf::one_hot(tpf::tensor({int64_t{1}}), int64_t{1} << 62); },
      "[one_hot] expected its byte size to fit in int64");
  expect_error<tpf::ShapeError>(
      [] { (void)tpf::broadcast_to(tpf::ones({1}), {-3}); },
      "[broadcast_to] expected non-negative extents");
  expect_error<tpf::ValueError>(
      [] {
        (void)tpf::arange<int64_t>(0, std::numeric_limits<int64_t>::max());
      },
      "[arange] expected its byte size to fit in int64");
  expect_error<tpf::ValueError>([] { (void)tpf::eye(3, -5); },
                                "[eye] expected n >= 0 and m >= 0");
  CHECK(tpf::eye(3).shape() == tpf::Shape{3, 3});
}

TEST_CASE("arange over the whole int64 range counts like NumPy") {
  constexpr int64_t lo = std::numeric_limits<int64_t>::min();
  constexpr int64_t hi = std::numeric_limits<int64_t>::max();
  // np.arange(INT64_MIN, INT64_MAX, INT64_MAX): 3 values, none wrapped.
  const auto r = tpf::arange<int64_t>(lo, hi, hi);
  REQUIRE(r.shape() == tpf::Shape{3});
  CHECK(r.to_vector<int64_t>() == std::vector<int64_t>{lo, -1, hi - 1});
  CHECK(tpf::arange<int64_t>(hi - 2, hi).to_vector<int64_t>() ==
        std::vector<int64_t>{hi - 2, hi - 1});
  CHECK(tpf::arange<int64_t>(5, 0).numel() == 0);
  CHECK(tpf::arange<int64_t>(5, 0, -2).to_vector<int64_t>() ==
        std::vector<int64_t>{5, 3, 1});
}

TEST_CASE("a tensor larger than memory is a ResourceExhaustedError") {
  // Both are beyond the 128 TiB of a process's address space, so the
  // allocation fails even where the kernel overcommits memory.
  expect_error<tpf::ResourceExhaustedError>(
      [] { (void)tpf::eye(int64_t{1} << 23, int64_t{1} << 23); },
      "[eye] expected 562949953421312 bytes");
  expect_error<tpf::ResourceExhaustedError>(
      [] { (void)tpf::zeros({int64_t{1} << 46}); }, "[full] expected");
}

TEST_CASE("absurd strides, pads and dilations: TF's output or an error") {
  constexpr int64_t huge = std::numeric_limits<int64_t>::max();
  constexpr int64_t far = int64_t{1} << 40;
  const auto x = tpf::ones({1, 1, 4, 4});
  // One window, as TensorFlow: the backends see the smallest such stride.
  CHECK(tpf::nn::max_pool2d(
            x, {.ksize = {2, 2}, .strides = {huge, huge}, .padding = "SAME"})
            .shape() == tpf::Shape{1, 1, 1, 1});
  const auto w = tpf::ones({1, 1, 2, 2});
  for (const int64_t stride : {far, huge}) {
    const auto y = tpf::nn::conv2d(x, w, {.strides = {stride}});
    CHECK(y.shape() == tpf::Shape{1, 1, 1, 1});
    CHECK(y.item<float>() == 4.0f);
  }
  expect_error<tpf::ValueError>(
      [&] {
        (void)tpf::nn::conv2d(x, w, {.padding = {huge, 1, 0, 0}});
      },
      "[conv2d] expected the padded input to fit in int64, got 4 + "
      "9223372036854775807");
  expect_error<tpf::ValueError>(
      [&] {
        (void)tpf::nn::conv2d(x, w, {.padding = {far, far, far, far}});
      },
      "[conv2d] conv: expected a shape whose element count fits in int64");
  expect_error<tpf::ValueError>(
      [&] { (void)tpf::nn::conv2d(x, w, {.dilations = {huge}}); },
      "[conv2d] expected the dilated filter extent to fit in int64");
  expect_error<tpf::ShapeError>(
      [&] { (void)tpf::nn::conv2d(x, w, {.dilations = {far}}); },
      "[conv2d] expected a dilated filter extent <= padded input");
}

TEST_CASE("degenerate sizes") {
  CHECK(tpf::matrix_determinant(tpf::ones({0, 0})).item<float>() == 1.0f);
  // A filter without taps has no window: no output shape follows from it.
  expect_error<tpf::ShapeError>(
      [] {
        (void)tpf::nn::conv2d(tpf::ones({1, 1, 5, 5}), tpf::ones({1, 1, 0, 3}));
      },
      "[conv2d] expected a filter extent >= 1 along spatial axis 0, got 0");
  expect_error<tpf::ShapeError>(
      [] {
        (void)tpf::nn::conv2d(tpf::ones({1, 1, 3, 3}), tpf::ones({1, 1, 0, 0}),
                              {.padding = "SAME"});
      },
      "[conv2d] expected a filter extent >= 1 along spatial axis 0, got 0");
  expect_error<tpf::ShapeError>(
      [] {
        (void)tpf::nn::conv1d(tpf::ones({1, 1, 5}), tpf::ones({1, 1, 0}));
      },
      "[conv1d] expected a filter extent >= 1 along spatial axis 0, got 0");
  expect_error<tpf::ShapeError>(
      [] {
        (void)tpf::nn::depthwise_conv2d(tpf::ones({1, 0, 4, 4}),
                                        tpf::ones({3, 3, 0, 1}), {});
      },
      "[depthwise_conv2d] expected");
  const bool nhwc[] = {false, true};
  for (const bool last : nhwc)
    expect_error<tpf::ShapeError>(
        [&] {
          (void)tpf::nn::separable_conv2d(
              last ? tpf::ones({1, 4, 4, 0}) : tpf::ones({1, 0, 4, 4}),
              last ? tpf::ones({3, 3, 0, 1}) : tpf::ones({0, 1, 3, 3}),
              last ? tpf::ones({1, 1, 0, 2}) : tpf::ones({2, 0, 1, 1}),
              {.data_format = last ? "NHWC" : "NCHW"});
        },
        "[separable_conv2d] depthwise_conv2d: expected x with at least 1 "
        "channel, got 0");
}

TEST_CASE("SAME windows over an empty axis make an empty output") {
  const auto x = tpf::ones({2, 1, 0, 3});
  const tpf::nn::PoolOptions pool{
      .ksize = {1, 1}, .strides = {2, 2}, .padding = "SAME"};
  CHECK(tpf::nn::max_pool2d(x, pool).shape() == tpf::Shape{2, 1, 0, 2});
  CHECK(tpf::nn::avg_pool2d(x, pool).shape() == tpf::Shape{2, 1, 0, 2});
  // Convolutions too, as TF's SAME sizes them (ceil(0 / 2) = 0 rows).
  CHECK(tpf::nn::conv2d(x, tpf::ones({4, 1, 1, 1}),
                        {.strides = {2}, .padding = "SAME"})
            .shape() == tpf::Shape{2, 4, 0, 2});
}

TEST_CASE("ops whose outputs are empty return at once, whatever the extents") {
  // 2^50 rows of nothing: no kernel loops over them.
  constexpr int64_t rows = int64_t{1} << 50;
  const auto x = tpf::broadcast_to(tpf::ones({1, 1, 0}), {rows, 1, 0});
  CHECK(tpf::nn::max_pool1d(x, {.ksize = {1}, .padding = "SAME"}).shape() ==
        tpf::Shape{rows, 1, 0});
  // softmax's row maxima, (2^50, 1, 1), are real: refused, not looped over.
  expect_error<tpf::ResourceExhaustedError>([&] { (void)tpf::nn::softmax(x); },
                                            "[softmax] max: expected");
  CHECK(tpf::gather(x, tpf::tensor({0}), 1).shape() == tpf::Shape{rows, 1, 0});
  CHECK((x * 2.0).shape() == tpf::Shape{rows, 1, 0});
}

TEST_CASE("max and min over an empty axis are -inf and +inf") {
  const auto e = tpf::ones({0, 3});
  for (float v : tpf::max(e, {0}).to_vector<float>())
    CHECK(v == -std::numeric_limits<float>::infinity());
  for (double v : tpf::min(e.cast(tpf::float64), {0}).to_vector<double>())
    CHECK(v == std::numeric_limits<double>::infinity());
}

TEST_CASE("a device index out of range is a DeviceError, not a wrapped one") {
  expect_error<tpf::DeviceError>([] { (void)tpf::Device::cuda(40000); },
                                 "[Device::cuda] expected a device index in "
                                 "[0, 32767], got 40000");
  expect_error<tpf::DeviceError>([] { (void)tpf::Device::cuda(-1); },
                                 "[Device::cuda] expected");
  CHECK(tpf::Device::cuda(32767).str() == "cuda:32767");
}

TEST_CASE("hyper-parameters that would only produce NaN are refused") {
  namespace optim = tpf::optim;
  constexpr double nan = std::numeric_limits<double>::quiet_NaN();
  constexpr double inf = std::numeric_limits<double>::infinity();
  expect_error<tpf::ValueError>([] { optim::Adam({.beta_1 = 1.0}); },
                                "[Adam] expected beta_1 in [0, 1), got 1");
  expect_error<tpf::ValueError>([] { optim::Adam({.beta_2 = 1.5}); },
                                "[Adam] expected beta_2 in [0, 1)");
  expect_error<tpf::ValueError>([] { optim::Adam({.epsilon = -1e-7}); },
                                "[Adam] expected a finite epsilon >= 0");
  expect_error<tpf::ValueError>([] { optim::AdamW({.beta_1 = 1.0}); },
                                "[AdamW] expected beta_1 in [0, 1)");
  expect_error<tpf::ValueError>([] { optim::Adam({.learning_rate = nan}); },
                                "[Adam] expected a finite learning_rate >= 0");
  expect_error<tpf::ValueError>([] { optim::SGD({.learning_rate = inf}); },
                                "[SGD] expected a finite learning_rate >= 0");
  expect_error<tpf::ValueError>([] { optim::Adagrad({.epsilon = 0.0}); },
                                "[Adagrad] expected a finite epsilon > 0");
  expect_error<tpf::ValueError>([] { optim::RMSProp({.rho = 2.0}); },
                                "[RMSProp] expected rho in [0, 1], got 2");
  expect_error<tpf::ValueError>([] { optim::RMSProp({.epsilon = -1.0}); },
                                "[RMSProp] expected a finite epsilon > 0");
  expect_error<tpf::ValueError>([] { optim::Adadelta({.rho = nan}); },
                                "[Adadelta] expected rho in [0, 1], got nan");
  expect_error<tpf::ValueError>([] { optim::Adadelta({.epsilon = -1.0}); },
                                "[Adadelta] expected a finite epsilon > 0");
  expect_error<tpf::ValueError>(
      [] { optim::Momentum({.momentum = 2.0}); },
      "[Momentum] expected momentum in [0, 1], got 2");
  expect_error<tpf::ValueError>(
      [] { (void)tpf::random_normal({2}, 0.0, nan); },
      "[random_normal] expected a finite mean and a finite stddev >= 0");
  expect_error<tpf::ValueError>(
      [] { (void)tpf::random_uniform({2}, -inf, inf); },
      "[random_uniform] expected finite minval < maxval");
  expect_error<tpf::ValueError>(
      [] { (void)tpf::stateless_random_uniform({2}, 7, 0.0, inf); },
      "[stateless_random_uniform] expected finite minval < maxval");
  // The defaults and ordinary settings still construct.
  optim::Adam ok({.learning_rate = 1e-3, .beta_1 = 0.0, .epsilon = 0.0});
  CHECK(ok.learning_rate() == 1e-3);
}

TEST_CASE("int64 values print exactly") {
  constexpr int64_t big = (int64_t{1} << 53) + 1;
  constexpr int64_t top = std::numeric_limits<int64_t>::max();
  std::ostringstream os;
  os << tpf::tensor({big, top, int64_t{-7}});
  const std::string s = os.str();
  CHECK_MESSAGE(s.find("9007199254740993") != std::string::npos, s);
  CHECK_MESSAGE(s.find("9223372036854775807") != std::string::npos, s);
  CHECK_MESSAGE(s.find("-7") != std::string::npos, s);
  std::ostringstream b;
  b << tpf::tensor({true, false});
  CHECK_MESSAGE(b.str().find("[ true, false]") != std::string::npos, b.str());
}

TEST_CASE("a scalar an integer dtype cannot hold is an error, not a wrap") {
  expect_error<tpf::ValueError>(
      [] { (void)(tpf::tensor({1}) + 1e10); },
      "[add] expected a value representable in int32, got 1e+10");
  expect_error<tpf::ValueError>(
      [] { (void)(2e10 * tpf::tensor({1})); },
      "[mul] expected a value representable in int32");
  expect_error<tpf::ValueError>(
      [] { (void)tpf::full({2}, 1e20, tpf::int32); },
      "[full] expected a value representable in int32");
  expect_error<tpf::ValueError>(
      [] {
        (void)tpf::full({2}, std::numeric_limits<double>::quiet_NaN(),
                        tpf::int64);
      },
      "[full] expected a value representable in int64");
  // In range: integer arithmetic as before; fractional: float32, as in
  // PyTorch.
  CHECK((tpf::tensor({1}) + 2147483646.0).to_vector<int64_t>() ==
        std::vector<int64_t>{2147483647});
  CHECK((tpf::tensor({1}) + 0.5).dtype() == tpf::float32);
}

TEST_CASE("a float cast into an integer dtype saturates; NaN is 0") {
  constexpr double nan = std::numeric_limits<double>::quiet_NaN();
  constexpr double inf = std::numeric_limits<double>::infinity();
  const auto x = tpf::tensor(
      {nan, inf, -inf, 1e10, -1e10, 2147483647.9, -2147483648.9, 3.7, -3.7});
  CHECK(x.cast(tpf::int32).to_vector<int>() ==
        std::vector<int>{0, INT32_MAX, INT32_MIN, INT32_MAX, INT32_MIN,
                         INT32_MAX, INT32_MIN, 3, -3});
  // 2^63 is the first double past INT64_MAX; the double below it converts.
  const auto y = tpf::tensor({9.3e18, -9.3e18, 9223372036854774784.0, nan});
  CHECK(y.cast(tpf::int64).to_vector<int64_t>() ==
        std::vector<int64_t>{INT64_MAX, INT64_MIN, 9223372036854774784, 0});
  // float32 through a strided view, as contiguous() copies.
  const auto f = tpf::transpose(
      tpf::reshape(tpf::tensor({3e9f, 1.5f, -3e9f, 2.5f}), {2, 2}));
  CHECK(f.cast(tpf::int32).to_vector<int>() ==
        std::vector<int>{INT32_MAX, INT32_MIN, 1, 2});
  // Into bool, NaN is non-zero: true, as in NumPy.
  CHECK(tpf::tensor({nan, 0.0}).cast(tpf::bool_).to_vector<int>() ==
        std::vector<int>{1, 0});
}

TEST_CASE("errors name the op the user called, in the user's terms") {
  const auto f = tpf::ones({2, 3});
  expect_error<tpf::DTypeError>(
      [] {
        (void)tpf::nn::log_softmax(tpf::tensor({true, false}));
      },
      "[log_softmax] expected float32 or float64 logits, got bool");
  expect_error<tpf::DTypeError>(
      [] {
        (void)tpf::nn::softmax(tpf::tensor({1, 2}));
      },
      "[softmax] expected float32 or float64 logits, got int32");
  expect_error<tpf::IndexError>([&] { (void)tpf::nn::crelu(f, 2); },
                                "[crelu] expected an axis in [-2, 2), got 2");
  // Errors of the ops inside a composite name the composite first.
  expect_error<tpf::ShapeError>(
      [&] {
        (void)tpf::nn::layer_normalization(f, 1, tpf::ones({4}), tpf::Tensor());
      },
      "[layer_normalization] mul: expected broadcastable shapes, got (2, 3) "
      "and (4,)");
  expect_error<tpf::IndexError>(
      [&] { (void)tpf::nn::moments(f, {5}); },
      "[moments] mean: expected an axis in [-2, 2), got 5");
  expect_error<tpf::ShapeError>(
      [] {
        (void)tpf::nn::sparse_softmax_cross_entropy_with_logits(
            tpf::reshape(tpf::tensor({0}), {}),
            tpf::reshape(tpf::tensor({1.f}), {}));
      },
      "[sparse_softmax_cross_entropy_with_logits] expected logits of rank >= "
      "1 (..., classes), got shape ()");
  expect_error<tpf::DTypeError>(
      [] {
        (void)tpf::nn::sparse_softmax_cross_entropy_with_logits(
            tpf::tensor({0}), tpf::tensor({{1, 2}}));
      },
      "[sparse_softmax_cross_entropy_with_logits] expected float32 or "
      "float64 logits, got int32");
  // NHWC convolutions speak of the user's NHWC shapes, not NCHW internals.
  tpf::nn::ConvOptions nhwc;
  nhwc.data_format = "NHWC";
  expect_error<tpf::ShapeError>(
      [&] {
        (void)tpf::nn::conv2d(tpf::ones({1, 8, 8, 3}), tpf::ones({3, 3, 4, 5}),
                              nhwc);
      },
      "[conv2d] expected input channels 3 = filter in-channels * groups, got "
      "4 * 1");
  expect_error<tpf::ShapeError>(
      [&] {
        (void)tpf::nn::conv2d_transpose(tpf::ones({1, 4, 4, 5}),
                                        tpf::ones({3, 3, 2, 5}), {1, 7, 7, 2},
                                        nhwc);
      },
      "[conv2d_transpose] expected x of shape (1, 5, 5, 5) for output_shape "
      "(1, 7, 7, 2), got (1, 4, 4, 5)");
}

TEST_CASE("split: sizes as tf.split takes them, one may be -1") {
  const auto x = tpf::arange(0, 5, 1, tpf::float32);
  const auto parts = tpf::split(x, std::vector<int64_t>{2, -1}, 0);
  REQUIRE(parts.size() == 2);
  CHECK(parts[1].to_vector<float>() == std::vector<float>{2.f, 3.f, 4.f});
  CHECK(tpf::split(x, std::vector<int64_t>{-1, 5}, 0)[0].numel() == 0);
  expect_error<tpf::ShapeError>(
      [&] {
        (void)tpf::split(x, std::vector<int64_t>{-1, 6}, 0);
      },
      "[split] expected sizes summing to at most 5 (axis 0), got (-1, 6)");
  expect_error<tpf::ShapeError>(
      [&] {
        (void)tpf::split(x, std::vector<int64_t>{-2, 7}, 0);
      },
      "[split] expected sizes >= 0 (one may be -1) summing to 5");
  expect_error<tpf::ShapeError>(
      [&] {
        (void)tpf::split(x, std::vector<int64_t>{-1, -1, 5}, 0);
      },
      "[split] expected sizes >= 0");
  expect_error<tpf::ValueError>(
      [&] {
        (void)tpf::split(x, std::vector<int64_t>{INT64_MAX, INT64_MAX}, 0);
      },
      "[split] expected the sum of sizes to fit in int64");
  // An empty batch splits across replicas; 2^50 empty parts do not exist.
  CHECK(tpf::split(tpf::ones({0, 3}), 4, 0).size() == 4);
  expect_error<tpf::ValueError>(
      [] {
        (void)tpf::split(tpf::ones({int64_t{1} << 50, 0}), int64_t{1} << 50);
      },
      "[split] expected at most 1048576 parts of an empty tensor, got "
      "1125899906842624");
}

TEST_CASE("pooling cost follows the data, not the window or the stride") {
  namespace nn = tpf::nn;
  constexpr int64_t huge = int64_t{1} << 30;
  constexpr int64_t far = std::numeric_limits<int64_t>::max();
  // 4x4 values 0..15 with the maximum, 15, at (1, 2).
  auto v = tpf::arange<double>(0, 16).to_vector<double>();
  std::swap(v[6], v[15]);
  for (tpf::DType dt : {tpf::float32, tpf::float64}) {
    CAPTURE(dt);
    const auto x = tpf::from_vector(v, {1, 1, 4, 4}).cast(dt);
    // A 2^30 window moved by 1: every SAME window covers the whole input.
    tpf::GradientTape tape(true);
    tape.watch(x);
    const auto m = nn::max_pool2d(x, {{huge}, {1}, "SAME"});
    const auto a = nn::avg_pool2d(x, {{huge}, {1}, "SAME"});
    CHECK(m.shape() == tpf::Shape{1, 1, 4, 4});
    CHECK(m.cast(tpf::float64).to_vector<double>() ==
          std::vector<double>(16, 15.0));
    CHECK_CLOSE(a.cast(tpf::float64), tpf::full({1, 1, 4, 4}, 7.5));
    std::vector<double> dm(16, 0.0);
    dm[6] = 16;  // every output's gradient goes to the maximum
    CHECK(tape.gradient(m, {x})[0].cast(tpf::float64).to_vector<double>() ==
          dm);
    CHECK_CLOSE(tape.gradient(a, {x})[0].cast(tpf::float64),
                tpf::ones({1, 1, 4, 4}, tpf::float64));
    // The window as its own stride: one output, the whole input.
    CHECK(nn::max_pool2d(x, {{huge}, {}, "SAME"}).item<double>() == 15.0);
    CHECK(nn::avg_pool2d(x, {{huge}, {}, "SAME"}).item<double>() == 7.5);
    // Counting the padding, the divisor is the window: 2^60.
    CHECK(
        nn::avg_pool2d(x, {{huge}, {}, "SAME", "NCHW", true}).item<double>() ==
        120.0 / double(huge) / double(huge));
    // A stride past the input: TensorFlow's one output, the first window.
    for (const char* padding : {"SAME", "VALID"}) {
      CAPTURE(padding);
      const auto y = nn::max_pool2d(x, {{2}, {far}, padding});
      CHECK(y.shape() == tpf::Shape{1, 1, 1, 1});
      CHECK(y.item<double>() == 5.0);
      CHECK(nn::avg_pool2d(x, {{2}, {far}, padding}).item<double>() == 2.5);
      CHECK(nn::avg_pool2d(x, {{2}, {far}, padding, "NCHW", true})
                .item<double>() == 2.5);
    }
    // 1-d and 3-d.
    const auto x1 = tpf::reshape(x, {1, 1, 16});
    CHECK(nn::max_pool1d(x1, {{huge}, {1}, "SAME"})
              .cast(tpf::float64)
              .to_vector<double>() == std::vector<double>(16, 15.0));
    CHECK(nn::max_pool1d(x1, {{3}, {far}, "SAME"}).item<double>() == 2.0);
    const auto x3 = tpf::reshape(x, {1, 1, 2, 2, 4});
    CHECK(nn::max_pool3d(x3, {{huge}, {1}, "SAME"})
              .cast(tpf::float64)
              .to_vector<double>() == std::vector<double>(16, 15.0));
    CHECK(nn::avg_pool3d(x3, {{huge}, {huge}, "SAME"}).item<double>() == 7.5);
    CHECK(nn::max_pool3d(x3, {{2}, {far}, "VALID"}).item<double>() == 13.0);
  }
}

TEST_CASE("integers wrap as NumPy's; huge shapes form no overflowing product") {
  // Found by the ops fuzzer under UBSan once it drew string tensors (which
  // shifted its programs): signed overflow in scalar kernels is undefined.
  constexpr int64_t lo = std::numeric_limits<int64_t>::min();
  constexpr int64_t hi = std::numeric_limits<int64_t>::max();
  const auto extremes = tpf::tensor<int64_t>({lo, hi});
  CHECK(tpf::abs(extremes).to_vector<int64_t>() ==
        std::vector<int64_t>{lo, hi});
  CHECK((-extremes).to_vector<int64_t>() == std::vector<int64_t>{lo, -hi});
  CHECK(tpf::square(extremes).to_vector<int64_t>() ==
        std::vector<int64_t>{0, 1});
  CHECK((extremes + extremes).to_vector<int64_t>() ==
        std::vector<int64_t>{0, -2});
  CHECK(tpf::sum(tpf::tensor<int64_t>({hi, 2})).item<int64_t>() == lo + 1);
  CHECK(tpf::prod(tpf::tensor<int64_t>({hi, 2})).item<int64_t>() == -2);
  const auto wide = tpf::broadcast_to(tpf::ones({1, 1, 2}), {0, hi, 2});
  CHECK(wide.numel() == 0);
  const auto empty = tpf::zeros({0, hi, 2});
  CHECK(empty.cast(tpf::float64).numel() == 0);
}
