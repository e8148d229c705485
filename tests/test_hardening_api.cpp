// Hostile but realistic arguments to the thread settings, tapes, variables,
// optimizers, schedules, creation, printing and the functions around
// training: each is a tapeflow::Error naming the setting or function the
// user called, at construction where the argument alone decides it (never a
// SIGFPE, a wrapped size, a segfault, an aborted process or another
// function's name). Layers and models: test_hardening_layers.cpp.
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "support/check.hpp"

namespace nn = tpf::nn;
using testing::expect_error;

TEST_CASE("thread counts past any machine are refused before any starts") {
  for (int n : {0, -1, 4097, 1 << 30}) {
    CAPTURE(n);
    expect_error<tpf::ValueError>(
        [n] { tpf::config::set_inter_op_threads(n); },
        "[set_inter_op_threads] expected a thread count in [1, 4096], got");
    expect_error<tpf::ValueError>(
        [n] { tpf::config::set_intra_op_threads(n); },
        "[set_intra_op_threads] expected a thread count in [1, 4096], got");
  }
}

TEST_CASE("errors name the function called, not the ops inside it") {
  const auto v = tpf::ones({3});
  expect_error<tpf::ShapeError>(
      [&] { (void)tpf::optim::clip_by_global_norm({v}, 1.0, tpf::ones({3})); },
      "[clip_by_global_norm] expected a scalar use_norm, got shape (3,)");
  expect_error<tpf::IndexError>(
      [&] { (void)tpf::optim::clip_by_norm(v, 1.0, {5}); },
      "[clip_by_norm] expected axes in [-1, 1), got 5");
  expect_error<tpf::DTypeError>(
      [] { nn::Embedding(10, 4, {.dtype = tpf::int32}); },
      "[embedding] expected a floating dtype, got int32");
  tpf::GradientTape tape;
  tape.watch(v);
  const auto y = tpf::sum(v * 2.0);
  expect_error<tpf::DTypeError>(
      [&] { (void)tape.gradient(y, {v}, {tpf::constant("seed")}); },
      "[gradient] expected floating output_gradients, got string");
  expect_error<tpf::ValueError>(
      [&] { (void)tpf::custom_gradient({}, {v}); },
      "[custom_gradient] expected a forward function, got none");
  const double nan = std::numeric_limits<double>::quiet_NaN();
  expect_error<tpf::ValueError>([&] { (void)tpf::arange<double>(0, nan, 1); },
                                "[arange] expected numbers, got [0, nan)");
}

TEST_CASE("enumerate stops at 2^63 - 1 rather than wrapping") {
  constexpr int64_t top = std::numeric_limits<int64_t>::max();
  auto it = tpf::data::range(3).enumerate(top - 1).make_iterator();
  CHECK(std::get<0>(*it.get_next()) == top - 1);
  CHECK(std::get<0>(*it.get_next()) == top);
  expect_error<tpf::ValueError>(
      [&] { (void)it.get_next(); },
      "[enumerate] expected counts up to 2^63 - 1, got one more element");
}

TEST_CASE("string split and join: oversized padding, 0-d axes") {
  // One string of 200000 pieces among 200000: a padded (200000, 200000)
  // result, 1.3 TB of strings; std::bad_alloc aborted the process.
  std::vector<std::string> texts(200000);
  for (int i = 0; i < 200000; ++i) texts[0] += "a ";
  expect_error<tpf::ResourceExhaustedError>(
      [&] { (void)tpf::strings::split(tpf::from_strings(texts, {200000})); },
      "[split] expected");
  CHECK(tpf::strings::join(tpf::constant("x")).shape() == tpf::Shape{});
  expect_error<tpf::IndexError>(
      [] { (void)tpf::strings::join(tpf::constant("x"), ",", 5); },
      "[join] expected the default axis -1 for a 0-d tensor (nothing to "
      "join), got 5");
}

TEST_CASE("DeviceScopes ending out of order leave the live ones in force") {
  auto outer = std::make_unique<tpf::DeviceScope>(tpf::Device::cuda(3));
  auto inner = std::make_unique<tpf::DeviceScope>(tpf::Device::cuda(4));
  outer.reset();
  CHECK(tpf::DeviceScope::current() == tpf::Device::cuda(4));
  inner.reset();  // it restored cuda(3), a scope already gone, for ever
  CHECK(!tpf::DeviceScope::current().has_value());
  CHECK(tpf::zeros({1}).device() == tpf::Device::cpu());
  // A device that does not exist is the creating op's error, not [to]'s.
  tpf::DeviceScope missing(tpf::Device::cuda(99));
  expect_error<tpf::DeviceError>([] { (void)tpf::zeros({2}); },
                                 "[full] expected a");
  expect_error<tpf::DeviceError>([] { (void)tpf::tensor({1.f}); },
                                 "[from_buffer] expected a");
}

TEST_CASE("a tape reset from inside its own gradient() is refused") {
  const auto x = tpf::tensor({1.0, 2.0});
  tpf::GradientTape tape(true);
  tape.watch(x);
  const auto z = (x * x) * 3.0;
  tpf::GradientOptions options;
  options.after_entry = [&] { tape.reset(); };
  expect_error<tpf::ValueError>(
      [&] { (void)tape.gradient(z, {x}, options); },
      "[reset] expected no gradient() in progress on this tape");
  // Outside gradient() it still works, and the tape records again.
  CHECK_CLOSE(tape.gradient(z, {x})[0], tpf::tensor({6.0, 12.0}));
  tape.reset();
  CHECK(tape.size() == 0);
}

TEST_CASE("cosine decay with warm-up near INT64_MAX steps") {
  constexpr int64_t top = std::numeric_limits<int64_t>::max();
  const tpf::optim::CosineDecay long_decay(0.1, top, 0.0, 1.0, 10);
  CHECK(long_decay(5) == doctest::Approx(0.55));
  CHECK(long_decay(20) == doctest::Approx(1.0));
  CHECK(long_decay(top) == doctest::Approx(0.0).epsilon(1e-9));
  const tpf::optim::CosineDecay long_warmup(0.1, 100, 0.0, 1.0, top);
  CHECK(long_warmup(5) == doctest::Approx(0.1));
  CHECK(long_warmup(top) == doctest::Approx(1.0));
}

TEST_CASE("an op that changes nothing reads a Variable's value, as TF does") {
  // reshape to its own shape, squeeze of nothing, broadcast_to its shape,
  // cast to its dtype and concat of one: each a value, not the Variable's
  // handle, which the next assign changes.
  tpf::Variable v(tpf::tensor({1.0f, 2.0f, 3.0f}));
  const std::vector<tpf::Tensor> reads = {
      tpf::reshape(v, {3}),
      tpf::reshape(v, {-1}),
      tpf::squeeze(v),
      tpf::broadcast_to(v, {3}),
      tpf::cast(v, tpf::float32),
      tpf::concat({v}, 0),
  };
  v.assign(tpf::tensor({7.0f, 8.0f, 9.0f}));
  for (size_t i = 0; i < reads.size(); ++i) {
    CAPTURE(i);
    CHECK_FALSE(reads[i].is_same(v));
    CHECK(reads[i].to_vector<float>() == std::vector<float>{1, 2, 3});
  }
  // Gradients still reach the variable through them.
  tpf::GradientTape tape;
  const auto y = tpf::sum(tpf::reshape(v, {3}) * tpf::cast(v, tpf::float32));
  CHECK_CLOSE(tape.gradient(y, {v})[0], tpf::tensor({14.0f, 16.0f, 18.0f}));
}

TEST_CASE("optimizer slots follow the parameter list, with a gradient or not") {
  // A first step without a gradient for `a` numbered a's slots second, so a
  // checkpoint restored after build({a, b}) swapped the two moments.
  tpf::Variable a(tpf::tensor({1.0, 2.0})), b(tpf::tensor({10.0, 20.0}));
  tpf::optim::Adam adam({.learning_rate = 0.1});
  adam.apply_gradients({tpf::Tensor(), tpf::tensor({1.0, 1.0})}, {a, b});
  adam.apply_gradients({tpf::tensor({5.0, 5.0}), tpf::tensor({1.0, 1.0})},
                       {a, b});
  tpf::optim::Adam fresh({.learning_rate = 0.1});
  fresh.build({a, b});
  const auto saved = adam.slots(), built = fresh.slots();
  REQUIRE(saved.size() == built.size());
  for (size_t i = 0; i < saved.size(); ++i)
    CHECK(saved[i].first == built[i].first);
  CHECK(saved[0].first == "param0/m");
  CHECK(saved[0].second.is_same(adam.slot(a, "m")));
  expect_error<tpf::DTypeError>(
      [&] {
        adam.apply_gradients({tpf::constant("g"), tpf::Tensor()}, {a, b});
      },
      "[apply_gradients] expected a floating gradient at 0, got string");
}

TEST_CASE("assign_add and assign_sub take a delta of the variable's shape") {
  tpf::Variable v(tpf::tensor({1.0f, 2.0f, 3.0f}));
  expect_error<tpf::ShapeError>(
      [&] { v.assign_add(tpf::scalar(1.0f)); },
      "[assign_add] expected a delta of shape (3,) (the variable's), got ()");
  expect_error<tpf::ShapeError>(
      [&] {
        v.assign_sub(tpf::ones({1, 3}));
      },
      "[assign_sub] expected a delta of shape (3,) (the variable's), got (1, "
      "3)");
  tpf::Variable flags(tpf::tensor({true, false}));
  expect_error<tpf::DTypeError>(
      [&] {
        flags.assign_add(tpf::tensor({true, true}));
      },
      "[assign_add] expected a numeric variable, got bool");
  v.assign_add(tpf::ones({3}));
  CHECK(v.to_vector<float>() == std::vector<float>{2, 3, 4});
  expect_error<tpf::ValueError>(
      [] { (void)tpf::from_buffer(nullptr, {2}, tpf::float32); },
      "[from_buffer] expected data for 2 elements of shape (2,), got a null "
      "pointer");
}

TEST_CASE("windows at the edges: empty axes, huge windows, Keras' sizes") {
  nn::PoolingOptions dilated{.window_shape = {2},
                             .pooling_type = "MAX",
                             .padding = "SAME",
                             .dilation_rate = {2}};
  CHECK(nn::pool(tpf::zeros({1, 1, 0}), dilated).shape() ==
        tpf::Shape{1, 1, 0});
  dilated.window_shape = {int64_t{1} << 62};
  dilated.padding = "VALID";
  dilated.dilation_rate = {4};
  expect_error<tpf::ValueError>(
      [&] {
        (void)nn::pool(tpf::ones({1, 1, 4}), dilated);
      },
      "[pool] expected the dilated window to fit in int64");
  // A SAME window of 2^40 taps over 5 values costs the 5 values (it took
  // memory for 5 * 2^40 indices). Taps 3 apart: outputs 0 and 3 read the 7,
  // 1 and 4 read -1 and -4, 2 reads -2 and -5, each with padding.
  dilated.window_shape = {int64_t{1} << 40};
  dilated.padding = "SAME";
  dilated.dilation_rate = {3};
  const auto row = tpf::tensor<double>({{{-1, -2, 7, -4, -5}}});
  CHECK(nn::pool(row, dilated).to_vector<double>() ==
        std::vector<double>{7, 0, 0, 7, 0});
  dilated.pooling_type = "AVG";
  const double taps = std::ldexp(1.0, 40);
  CHECK(
      nn::pool(row, dilated).to_vector<double>() ==
      std::vector<double>{7 / taps, -5 / taps, -7 / taps, 7 / taps, -5 / taps});
  // Two taps 2 apart around one value read only padding: 0, as in TF.
  dilated = {.window_shape = {2},
             .pooling_type = "MAX",
             .padding = "SAME",
             .dilation_rate = {2}};
  CHECK(nn::pool(tpf::full({1, 1, 1}, -3.0), dilated).to_vector<float>() ==
        std::vector<float>{0});

  // count_include_pad over windows whose padded size passes int64: tiny
  // averages, not a division by 0; a SAME window of 2^63 - 1 taps keeps
  // ceil(2 / 1) = 2 outputs.
  nn::PoolOptions wide{.ksize = {int64_t{1} << 32},
                       .strides = {1},
                       .padding = "SAME",
                       .count_include_pad = true};
  const auto tiny = nn::avg_pool2d(tpf::ones({1, 1, 2, 2}, tpf::float64), wide)
                        .to_vector<double>();
  for (double v : tiny) {
    CHECK(std::isfinite(v));
    CHECK(v > 0);
    CHECK(v < 1e-18);
  }
  // float32 too, and its gradient (oneDNN refused the window: ValueError).
  const auto ones32 = tpf::ones({1, 1, 2, 2});
  tpf::GradientTape wide_tape;
  wide_tape.watch(ones32);
  const auto tiny32 = nn::avg_pool2d(ones32, wide);
  CHECK_CLOSE(tiny32.cast(tpf::float64), tpf::from_vector(tiny, {1, 1, 2, 2}),
              1e-6, 0);
  const auto spread = wide_tape.gradient(tpf::sum(tiny32), {ones32})[0];
  CHECK_CLOSE(spread, tiny32, 1e-6, 0);  // 4 windows of 4 / 2^64 each
  wide.ksize = {std::numeric_limits<int64_t>::max()};
  CHECK(nn::avg_pool1d(tpf::ones({1, 1, 2}, tpf::float64), wide).shape() ==
        tpf::Shape{1, 1, 2});

  // SAME over an empty spatial axis is an empty output, as in TF.
  const auto x = tpf::ones({1, 1, 0, 4});
  const auto w = tpf::ones({1, 1, 3, 3});
  tpf::GradientTape tape;
  tape.watch(x);
  tape.watch(w);
  const auto y = nn::conv2d(x, w, {.padding = "SAME"});
  CHECK(y.shape() == tpf::Shape{1, 1, 0, 4});
  const auto g = tape.gradient(tpf::sum(y), {x, w});
  CHECK(g[0].shape() == x.shape());
  CHECK_CLOSE(g[1], tpf::zeros({1, 1, 3, 3}));

  // Conv2DTranspose, VALID, kernel shorter than the stride: in * stride.
  nn::Conv2DTranspose up(1, {1, 1}, {.strides = {2}, .data_format = "NHWC"});
  CHECK(up(tpf::ones({1, 3, 3, 1})).shape() == tpf::Shape{1, 6, 6, 1});
  nn::Conv2DTranspose up3(1, {3, 3}, {.strides = {2}, .data_format = "NHWC"});
  CHECK(up3(tpf::ones({1, 3, 3, 1})).shape() == tpf::Shape{1, 7, 7, 1});
}

TEST_CASE("learning-rate schedules refuse NaN and negative rates") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  namespace optim = tpf::optim;
  expect_error<tpf::ValueError>(
      [&] { optim::ExponentialDecay(nan, 10, 0.9); },
      "[ExponentialDecay] expected a finite initial_learning_rate >= 0, got "
      "nan");
  expect_error<tpf::ValueError>(
      [] { optim::ExponentialDecay(0.1, 10, -0.9); },
      "[ExponentialDecay] expected a finite decay_rate >= 0, got -0.9");
  expect_error<tpf::ValueError>(
      [] {
        optim::PiecewiseConstantDecay({5}, {0.1, -5.0});
      },
      "[PiecewiseConstantDecay] expected a finite value >= 0, got -5");
  expect_error<tpf::ValueError>(
      [&] { optim::CosineDecay(0.1, 10, nan); },
      "[CosineDecay] expected a finite alpha >= 0, got nan");
  expect_error<tpf::ValueError>(
      [&] { optim::CosineDecay(0.1, 10, 0.0, nan, 5); },
      "[CosineDecay] expected a finite warmup_target >= 0, got nan");

  // A user's schedule is checked at the step that uses its rate, before any
  // parameter changes.
  struct Diverging final : optim::LearningRateSchedule {
    double operator()(int64_t step) const override {
      return step < 1 ? 0.5 : std::numeric_limits<double>::quiet_NaN();
    }
  };
  tpf::Variable w(tpf::ones({2}, tpf::float64));
  optim::SGD sgd(
      optim::SGDOptions{.learning_rate = std::make_shared<Diverging>()});
  sgd.apply_gradients({tpf::ones({2}, tpf::float64)}, {w});
  CHECK_CLOSE(w, tpf::full({2}, 0.5, tpf::float64));
  expect_error<tpf::ValueError>(
      [&] { sgd.apply_gradients({tpf::ones({2}, tpf::float64)}, {w}); },
      "[SGD] expected a finite learning_rate >= 0 from its schedule at step "
      "1, got nan");
  CHECK_CLOSE(w, tpf::full({2}, 0.5, tpf::float64));
  CHECK(sgd.iterations() == 1);

  expect_error<tpf::ValueError>(
      [&] { (void)sgd.minimize(std::function<tpf::Tensor()>(), {w}); },
      "[minimize] expected a loss function, got an empty one");
  expect_error<tpf::ValueError>(
      [&] { (void)sgd.compute_gradients(std::function<tpf::Tensor()>(), {w}); },
      "[compute_gradients] expected a loss function, got an empty one");
}

TEST_CASE("views that store one value split into as many parts as it holds") {
  const auto view = tpf::broadcast_to(tpf::ones({1}), {int64_t{1} << 40});
  expect_error<tpf::ValueError>(
      [&] { (void)tpf::unstack(view); },
      "[unstack] expected at most 1048576 parts of a view that stores 1 "
      "elements, got 1099511627776");
  expect_error<tpf::ValueError>(
      [&] { (void)tpf::split(view, int64_t{1} << 40); },
      "[split] expected at most 1048576 parts of a view that stores 1 "
      "elements, got 1099511627776");
  const auto rows = tpf::broadcast_to(tpf::tensor({1.0, 2.0}), {5, 2});
  const auto parts = tpf::unstack(rows);
  REQUIRE(parts.size() == 5);
  CHECK_CLOSE(parts[4], tpf::tensor({1.0, 2.0}));
}

TEST_CASE("bool tensors hold 0 or 1, whatever bytes from_buffer is given") {
  const uint8_t bytes[3] = {0, 2, 255};
  const auto b = tpf::from_buffer(bytes, {3}, tpf::bool_);
  CHECK(tpf::cast(b, tpf::int32).to_vector<int32_t>() ==
        std::vector<int32_t>{0, 1, 1});
  CHECK(tpf::equal(b, tpf::ones({3}, tpf::bool_)).to_vector<int32_t>() ==
        std::vector<int32_t>{0, 1, 1});
  CHECK(tpf::logical_not(b).to_vector<int32_t>() ==
        std::vector<int32_t>{1, 0, 0});
}

TEST_CASE("creators that compute values refuse string under their own name") {
  expect_error<tpf::DTypeError>([] { (void)tpf::eye(2, 2, tpf::string_); },
                                "[eye] expected a numeric dtype, got string");
  expect_error<tpf::DTypeError>(
      [] { (void)tpf::arange<int64_t>(0, 3, 1, tpf::string_); },
      "[arange] expected a numeric dtype, got string");
  expect_error<tpf::DTypeError>(
      [] { (void)tpf::arange<double>(0, 3, 1, tpf::string_); },
      "[arange] expected a numeric dtype, got string");
}
