// Convolutions: second-order gradients (each adjoint is the other's
// gradient), the forms strides and dilations take, and the argument errors of
// every public function.
#include <string>

#include "support/check.hpp"

using testing::expect_error;
using testing::uniform64;
using Ts = std::vector<tpf::Tensor>;
using Opts = tpf::nn::ConvOptions;
using V = std::vector<int64_t>;

TEST_CASE("conv second-order gradients") {
  const Opts o{.strides = {2, 1}, .padding = "SAME", .groups = 2};
  for (int which : {0, 1}) {
    CAPTURE(which);
    const auto fn = [&](const Ts& in) {
      tpf::GradientTape inner;
      inner.watch(in[0]);
      inner.watch(in[1]);
      const auto y = tpf::sum(tpf::tanh(tpf::nn::conv2d(in[0], in[1], o)));
      return inner.gradient(y, {in[0], in[1]})[which];
    };
    const auto why = testing::gradcheck(
        fn, {uniform64({1, 4, 5, 4}), uniform64({2, 2, 3, 2})});
    CHECK_MESSAGE(why.empty(), why);
  }
  // Through the transpose: its gradients are conv and grad_filter.
  const auto fn = [](const Ts& in) {
    tpf::GradientTape inner;
    inner.watch(in[1]);
    const auto y =
        tpf::nn::conv2d_transpose(in[0], in[1], {1, 2, 5, 5}, {.strides = {2}});
    return inner.gradient(tpf::sum(y * y * y), {in[1]})[0];
  };
  const auto why = testing::gradcheck(
      fn, {uniform64({1, 3, 2, 2}), uniform64({3, 2, 3, 3})});
  CHECK_MESSAGE(why.empty(), why);
}

TEST_CASE("conv argument errors") {
  const auto x = tpf::zeros({1, 4, 5, 5});
  const auto w = tpf::zeros({2, 4, 3, 3});
  using tpf::nn::conv2d;
  expect_error<tpf::ShapeError>(
      [&] {
        conv2d(tpf::zeros({4, 5, 5}), w);
      },
      "[conv2d] expected x of rank 4");
  expect_error<tpf::ShapeError>(
      [&] {
        conv2d(x, tpf::zeros({2, 3, 3, 3}));
      },
      "[conv2d] expected input channels");
  expect_error<tpf::ValueError>([&] { conv2d(x, w, {.groups = 3}); },
                                "[conv2d] expected groups");
  expect_error<tpf::ValueError>(
      [&] {
        conv2d(x, w, {.strides = {1, 0}});
      },
      "[conv2d] expected positive strides");
  expect_error<tpf::ValueError>([&] { conv2d(x, w, {.dilations = {-1}}); },
                                "[conv2d] expected positive dilations");
  expect_error<tpf::ShapeError>(
      [&] {
        conv2d(x, w, {.dilations = {3, 1}});
      },
      "[conv2d] expected a dilated filter extent");
  expect_error<tpf::ValueError>([&] { conv2d(x, w, {.padding = "FULL"}); },
                                "[conv2d] expected padding");
  expect_error<tpf::ShapeError>(
      [&] {
        conv2d(x, w, {.padding = {1, 1}});
      },
      "[conv2d] expected 4 explicit pads");
  expect_error<tpf::ValueError>([&] { conv2d(x, w, {.data_format = "CHWN"}); },
                                "[conv2d] expected data_format");
  expect_error<tpf::DTypeError>(
      [&] {
        conv2d(tpf::zeros({1, 4, 5, 5}, tpf::int32), w);
      },
      "[conv2d] expected x of float32 or float64");
  expect_error<tpf::ValueError>(
      [&] {
        tpf::nn::conv1d(tpf::zeros({1, 4, 5}), tpf::zeros({2, 4, 3}),
                        {.data_format = "NHWC"});
      },
      "[conv1d] expected data_format");
  expect_error<tpf::ShapeError>(
      [&] {
        tpf::nn::conv2d_transpose(tpf::zeros({1, 2, 3, 3}), w, {1, 4, 9, 9});
      },
      "[conv2d_transpose] expected x of shape");
  expect_error<tpf::ShapeError>(
      [&] {
        tpf::nn::depthwise_conv2d(x, tpf::zeros({6, 1, 3, 3}));
      },
      "[depthwise_conv2d] expected filter");
  expect_error<tpf::ShapeError>(
      [&] {
        tpf::nn::separable_conv2d(x, tpf::zeros({4, 1, 3, 3}),
                                  tpf::zeros({2, 5, 1, 1}));
      },
      "[separable_conv2d] expected a 1x1 pointwise filter");
}

TEST_CASE("conv strides and dilations: one value for every axis, or one each") {
  using tpf::nn::conv2d;
  using tpf::nn::conv3d;
  for (const auto dtype : {tpf::float64, tpf::float32}) {
    CAPTURE(tpf::dtype_name(dtype));
    const auto x2 = uniform64({1, 2, 9, 8}).cast(dtype);
    const auto w2 = uniform64({3, 2, 3, 2}).cast(dtype);
    const auto y2 = conv2d(x2, w2, {.strides = {2, 2}, .dilations = {2, 2}});
    CHECK(conv2d(x2, w2, {.strides = {2}, .dilations = {2}})
              .to_vector<double>() == y2.to_vector<double>());
    const auto x3 = uniform64({1, 2, 6, 5, 7}).cast(dtype);
    const auto w3 = uniform64({2, 2, 2, 3, 2}).cast(dtype);
    const auto y3 = conv3d(x3, w3, {.strides = {3, 3, 3}, .padding = "SAME"});
    CHECK(conv3d(x3, w3, {.strides = {3}, .padding = "SAME"})
              .to_vector<double>() == y3.to_vector<double>());
  }
  const auto x = tpf::zeros({1, 4, 5, 5}), w = tpf::zeros({2, 4, 3, 3});
  expect_error<tpf::ValueError>(
      [&] {
        conv2d(x, w, {.strides = {1, 1, 1}});
      },
      "[conv2d] expected strides of 1 or 2 values, got [1, 1, 1]");
  expect_error<tpf::ValueError>(
      [] {
        conv3d(tpf::zeros({1, 1, 4, 4, 4}), tpf::zeros({1, 1, 2, 2, 2}),
               {.dilations = {1, 2}});
      },
      "[conv3d] expected dilations of 1 or 3 values, got [1, 2]");
  expect_error<tpf::ValueError>(
      [] {
        tpf::nn::conv1d(tpf::zeros({1, 4, 5}), tpf::zeros({2, 4, 3}),
                        {.strides = {1, 1}});
      },
      "[conv1d] expected strides of 1 value, got [1, 1]");
  expect_error<tpf::ValueError>(
      [&] {
        tpf::nn::depthwise_conv2d(x, tpf::zeros({4, 1, 3, 3}),
                                  {.dilations = {1, 1, 1}});
      },
      "[depthwise_conv2d] expected dilations of 1 or 2 values, got [1, 1, 1]");
}
