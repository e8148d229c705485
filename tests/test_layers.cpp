// Layers and models: forward against the functional ops, weight names and
// counts, build on first call, train/eval behaviour, initializers, summary.
#include <cmath>
#include <iostream>
#include <sstream>

#include "support/check.hpp"

namespace nn = tpf::nn;

TEST_CASE("Dense computes activation(x W + b) and builds on first call") {
  nn::Dense dense(3, {.activation = nn::relu});
  CHECK(dense.parameters().empty());
  const auto x = tpf::random_uniform({4, 5}, -1.0, 1.0);
  const auto y = dense(x);
  REQUIRE(dense.parameters().size() == 2);
  CHECK(y.shape() == tpf::Shape{4, 3});
  CHECK_CLOSE(y, tpf::relu(tpf::matmul(x, dense.kernel()) + dense.bias()));
  const auto named = dense.named_parameters();
  CHECK(named[0].first == "dense/kernel");
  CHECK(named[1].first == "dense/bias");
  CHECK(dense.count_params() == 5 * 3 + 3);
  CHECK_THROWS_AS(dense(tpf::ones({4, 6})), tpf::ShapeError);
  nn::Dense eager(2, {.use_bias = false, .input_dim = 7});
  CHECK(eager.count_params() == 14);
  CHECK(dense(tpf::ones({2, 3, 5})).shape() == tpf::Shape{2, 3, 3});
}

TEST_CASE("initializers follow Keras' scales and repeat under a seed") {
  const auto g = nn::glorot_uniform(7)({200, 300}, 200, 300, tpf::float32);
  const double limit = std::sqrt(6.0 / 500.0);
  CHECK(tpf::max(g).item<double>() < limit);
  CHECK(tpf::min(g).item<double>() >= -limit);
  CHECK(tpf::max(g).item<double>() > 0.95 * limit);
  CHECK(g.to_vector<float>() ==
        nn::glorot_uniform(7)({200, 300}, 200, 300, tpf::float32)
            .to_vector<float>());
  const auto h = nn::he_normal(3)({400, 500}, 400, 500, tpf::float64);
  const double sd = std::sqrt(tpf::mean(tpf::square(h)).item<double>());
  CHECK(sd == doctest::Approx(std::sqrt(2.0 / 400)).epsilon(0.03));
  const auto t =
      nn::truncated_normal(1.0, 0.5, 11)({10000}, 1, 1, tpf::float64);
  CHECK(tpf::max(t).item<double>() <= 2.0);
  CHECK(tpf::min(t).item<double>() >= 0.0);
  CHECK(nn::constant(2.5)({3}, 1, 1, tpf::float32).to_vector<float>() ==
        std::vector<float>{2.5f, 2.5f, 2.5f});
}

TEST_CASE("variance_scaling: PyTorch's default and Keras' modes") {
  // PyTorch's Linear/Conv default: U(-1/sqrt(fan_in), 1/sqrt(fan_in)).
  const auto u = nn::variance_scaling(1.0 / 3, "fan_in", "uniform", 5)(
      {800}, 64, 9, tpf::float64);
  CHECK(tpf::max(u).item<double>() <= 1.0 / 8);
  CHECK(tpf::min(u).item<double>() >= -1.0 / 8);
  CHECK(tpf::max(u).item<double>() > 0.95 / 8);
  const auto n = nn::variance_scaling(2.0, "fan_avg", "truncated_normal", 5)(
      {300, 300}, 100, 300, tpf::float64);
  CHECK(std::sqrt(tpf::mean(tpf::square(n)).item<double>()) ==
        doctest::Approx(std::sqrt(2.0 / 200)).epsilon(0.03));
  CHECK_THROWS_AS(nn::variance_scaling(1.0, "fan"), tpf::ValueError);
  CHECK_THROWS_AS(nn::variance_scaling(1.0, "fan_in", "normal"),
                  tpf::ValueError);
  CHECK_THROWS_AS(nn::variance_scaling(0.0), tpf::ValueError);
}

TEST_CASE("a Sequential CNN names its layers, counts weights and trains") {
  tpf::manual_seed(1);
  nn::Sequential model;
  model.add(nn::Conv2D(4, {3, 3}, {.padding = "SAME", .activation = nn::relu}));
  model.add(nn::MaxPool2D());
  model.add(nn::BatchNormalization());
  model.add(nn::Conv2D(6, {3, 3}));
  model.add(nn::Flatten());
  model.add(nn::Dropout(0.5, 9));
  model.add(nn::Dense(10));
  const auto x = tpf::random_uniform({8, 1, 12, 12});
  const std::string table = model.summary({8, 1, 12, 12});
  CHECK(table.find("conv2d (conv2d)") != std::string::npos);
  CHECK(table.find("conv2d_1 (conv2d)") != std::string::npos);
  CHECK(table.find("(8, 10)") != std::string::npos);
  // conv 4*1*9+4, bn 4*4, conv 6*4*9+6, dense (6*4*4)*10+10
  const int64_t total = 40 + 16 + 222 + 970;
  CHECK(model.count_params() == total);
  CHECK(model.count_params(true) == total - 8);
  CHECK(table.find("Total params: " + std::to_string(total)) !=
        std::string::npos);
  const auto names = model.named_parameters();
  CHECK(names.front().first == "sequential/conv2d/kernel");
  CHECK(names.back().first == "sequential/dense/bias");

  const auto labels = tpf::tensor({0, 1, 2, 3, 4, 5, 6, 7});
  auto loss_of = [&] {
    return tpf::mean(
        nn::sparse_softmax_cross_entropy_with_logits(labels, model(x)));
  };
  model.train();
  const double first = loss_of().item<double>();
  for (int step = 0; step < 30; ++step) {
    tpf::GradientTape tape;
    const auto loss = loss_of();
    auto params = model.parameters();
    const auto grads = tape.gradient(loss, {params.begin(), params.end()});
    for (size_t i = 0; i < params.size(); ++i) {
      REQUIRE(grads[i].defined());
      params[i].assign_sub(grads[i] * 0.05);
    }
  }
  CHECK(loss_of().item<double>() < first);
}

TEST_CASE("train and eval switch dropout and batch normalization") {
  nn::Sequential model;
  model.add(nn::BatchNormalization({.momentum = 0.5}));
  model.add(nn::Dropout(0.5, 3));
  const auto x = tpf::random_uniform({16, 3}, 1.0, 2.0);
  model.train();
  const auto y_train = model(x);
  const auto vars = model.named_variables();
  REQUIRE(vars.size() == 4);
  CHECK(vars[2].first == "sequential/batch_normalization/moving_mean");
  // One training step moved the running mean halfway to the batch mean.
  CHECK_CLOSE(vars[2].second, tpf::mean(x, {0}) * 0.5, 1e-5, 1e-6);
  model.eval();
  const auto y1 = model(x), y2 = model(x);
  CHECK_CLOSE(y1, y2);  // no dropout, running statistics
  CHECK(tpf::sum(tpf::equal(y_train, tpf::scalar(0.f))).item<int64_t>() > 0);
}

TEST_CASE("BatchNormalization over axis -1 normalizes the feature axis") {
  nn::BatchNormalization bn({.momentum = 0.5, .axis = -1});
  // (N, T, F) = (1, 2, 2): feature 0 holds {1, 3}, feature 1 {10, 30}.
  const auto x = tpf::tensor<float>({{{1, 10}, {3, 30}}});
  const auto y = bn(x);
  const float a = 1 / std::sqrt(1.001f), b = 10 / std::sqrt(100.001f);
  CHECK_CLOSE(y, tpf::from_vector<float>({-a, -b, a, b}, {1, 2, 2}));
  const auto vars = bn.named_variables();
  REQUIRE(vars.size() == 4);
  CHECK(vars[0].second.shape() == tpf::Shape{2});
  // Halfway to the batch mean (2, 20) and unbiased variance (2, 200).
  CHECK_CLOSE(vars[2].second, tpf::tensor({1.f, 10.f}));
  CHECK_CLOSE(vars[3].second, tpf::tensor({1.5f, 100.5f}));
  // The same as channels-first batch norm of the transposed input.
  nn::BatchNormalization first({.momentum = 0.5});
  CHECK_CLOSE(y,
              tpf::transpose(first(tpf::transpose(x, {0, 2, 1})), {0, 2, 1}));
  bn.eval();
  CHECK(bn(x).shape() == tpf::Shape{1, 2, 2});
  nn::BatchNormalization out_of_range({.axis = 3});
  testing::expect_error<tpf::IndexError>(
      [&] { (void)out_of_range(x); },
      "[batch_normalization] expected axis in [-3, 3) for inputs of rank 3, "
      "got 3");
}

TEST_CASE("BatchNormalization trains on the unmasked steps only (Keras)") {
  nn::BatchNormalization bn({.momentum = 0.0, .axis = -1});
  const auto x = tpf::from_vector<double>({1, 2, 100, 3, 200, 300}, {2, 3, 1});
  const auto mask =
      tpf::tensor<bool>({{true, true, false}, {true, false, false}});
  const auto steps = tpf::reshape(mask, {2, 3, 1});
  bn.build_for(x.shape(), x.device());
  // Counted: 1, 2, 3: mean 2, biased variance 2/3, unbiased 1.
  const auto y = bn.forward_masked(x, mask);
  CHECK_CLOSE(y, (x - 2.0) * (1 / std::sqrt(2.0 / 3 + 1e-3)), 1e-6, 1e-6);
  const auto vars = bn.named_variables();
  CHECK_CLOSE(vars[2].second, tpf::tensor({2.f}));
  CHECK_CLOSE(vars[3].second, tpf::tensor({1.f}));
  // A padded step's NaN stays out of the statistics.
  const auto zero = tpf::scalar(0.0, tpf::float64);
  const auto poisoned =
      tpf::where(steps, x, tpf::scalar(testing::kNan, tpf::float64));
  CHECK_CLOSE(tpf::where(steps, bn.forward_masked(poisoned, mask), zero),
              tpf::where(steps, y, zero));
  CHECK(testing::gradcheck(
            [&](const std::vector<tpf::Tensor>& in) {
              return bn.forward_masked(in[0], mask);
            },
            {x}) == "");
  // An all-true mask is no mask.
  const auto r = tpf::random_uniform({4, 3, 2}, -1.0, 1.0, tpf::float64);
  nn::BatchNormalization plain({.momentum = 0.5, .axis = -1}),
      masked({.momentum = 0.5, .axis = -1});
  const auto y_plain = plain(r);
  masked.build_for(r.shape(), r.device());
  CHECK_CLOSE(masked.forward_masked(r, tpf::ones({4, 3}, tpf::bool_)), y_plain,
              1e-9, 1e-9);
  for (size_t i = 0; i < 4; ++i)
    CHECK_CLOSE(masked.named_variables()[i].second,
                plain.named_variables()[i].second);
  // Channels along the masked axis: channel 1 counts one step (variance 0),
  // channel 2 none and keeps its statistics; evaluation ignores the mask.
  nn::BatchNormalization per_step({.momentum = 0.0});
  per_step.build_for(x.shape(), x.device());
  (void)per_step.forward_masked(x, mask);
  CHECK_CLOSE(per_step.named_variables()[2].second,
              tpf::tensor({2.f, 2.f, 0.f}));
  CHECK_CLOSE(per_step.named_variables()[3].second,
              tpf::tensor({2.f, 0.f, 1.f}));
  per_step.eval();
  CHECK_CLOSE(per_step.forward_masked(x, mask), per_step(x));
  testing::expect_error<tpf::ShapeError>(
      [&] {
        (void)bn.forward_masked(x, tpf::ones({2, 2}, tpf::bool_));
      },
      "[batch_normalization] expected a mask of shape (2, 3) for inputs "
      "(2, 3, 1), got (2, 2)");
}

TEST_CASE("a Sequential passes Embedding's mask to BatchNormalization") {
  nn::Sequential model;
  model.add(nn::Embedding(4, 1, {.mask_zero = true}));
  model.add(nn::BatchNormalization({.momentum = 0.0, .axis = -1}));
  const auto ids = tpf::tensor<int64_t>({{1, 2, 0, 0}});
  (void)model(ids);
  const auto table = model.named_variables()[0].second;
  const auto rows = tpf::gather(table, tpf::tensor<int64_t>({1, 2}));
  CHECK_CLOSE(model.named_variables()[3].second, tpf::mean(rows, {0}));
}

TEST_CASE(
    "print_all_variables lists index, shape and name (the seed's format)") {
  nn::Sequential model;
  model.add(nn::Dense(3));
  model.add(nn::BatchNormalization());
  model(tpf::ones({2, 784}));
  std::ostringstream all, trainable;
  nn::print_all_variables(model, /*train_only=*/false, all);
  nn::print_all_variables(model, /*train_only=*/true, trainable);
  CHECK(all.str() ==
        "  [*] printing global variables\n"
        "  var   0: (784, 3)          sequential/dense/kernel\n"
        "  var   1: (3,)              sequential/dense/bias\n"
        "  var   2: (3,)              sequential/batch_normalization/gamma\n"
        "  var   3: (3,)              sequential/batch_normalization/beta\n"
        "  var   4: (3,)              "
        "sequential/batch_normalization/moving_mean\n"
        "  var   5: (3,)              "
        "sequential/batch_normalization/moving_variance\n");
  CHECK(trainable.str() ==
        "  [*] printing trainable variables\n"
        "  var   0: (784, 3)          sequential/dense/kernel\n"
        "  var   1: (3,)              sequential/dense/bias\n"
        "  var   2: (3,)              sequential/batch_normalization/gamma\n"
        "  var   3: (3,)              sequential/batch_normalization/beta\n");

  std::ostringstream captured;
  auto* const cout_buf = std::cout.rdbuf(captured.rdbuf());
  nn::print_all_variables(model);
  std::cout.rdbuf(cout_buf);
  CHECK(captured.str() == all.str());
}

TEST_CASE(
    "the other convolution and pooling layers produce the shapes Keras does") {
  const auto x = tpf::random_uniform({2, 3, 8, 8});
  CHECK(
      nn::Conv2DTranspose(5, {3, 3}, {.strides = {2, 2}, .padding = "SAME"})(x)
          .shape() == tpf::Shape{2, 5, 16, 16});
  CHECK(nn::Conv2DTranspose(5, {3, 3})(x).shape() == tpf::Shape{2, 5, 10, 10});
  CHECK(nn::DepthwiseConv2D({3, 3}, 2)(x).shape() == tpf::Shape{2, 6, 6, 6});
  nn::SeparableConv2D sep(4, {3, 3}, 1, {.padding = "SAME"});
  CHECK(sep(x).shape() == tpf::Shape{2, 4, 8, 8});
  CHECK(sep.count_params() == 3 * 9 + 3 * 4 + 4);
  CHECK(nn::Conv1D(4, 3)(tpf::random_uniform({2, 3, 10})).shape() ==
        tpf::Shape{2, 4, 8});
  CHECK(
      nn::Conv3D(2, {2, 2, 2})(tpf::random_uniform({1, 3, 4, 4, 4})).shape() ==
      tpf::Shape{1, 2, 3, 3, 3});
  CHECK(nn::AvgPool2D({.ksize = {2, 2}})(x).shape() == tpf::Shape{2, 3, 4, 4});
  CHECK(nn::MaxPool3D()(tpf::random_uniform({1, 2, 4, 4, 4})).shape() ==
        tpf::Shape{1, 2, 2, 2, 2});
  nn::Conv2D nhwc(4, {3, 3}, {.data_format = "NHWC"});
  CHECK(nhwc(tpf::random_uniform({2, 8, 8, 3})).shape() ==
        tpf::Shape{2, 6, 6, 4});
  CHECK(nhwc.kernel().shape() == tpf::Shape{3, 3, 3, 4});
  CHECK_THROWS_AS(nn::Conv2D(4, {3, 3})(tpf::ones({3, 8, 8})), tpf::ShapeError);
  CHECK_THROWS_AS(nn::Dropout(1.0), tpf::ValueError);
}

TEST_CASE("layers: an empty batch flattens, a kernel without taps is refused") {
  CHECK(nn::Flatten()(tpf::ones({0, 2, 3})).shape() == tpf::Shape{0, 6});
  CHECK(nn::Flatten()(tpf::ones({4, 0, 3})).shape() == tpf::Shape{4, 0});
  CHECK_THROWS_WITH_AS(
      nn::Conv2D(1, {0, 3}),
      doctest::Contains("expected kernel extents >= 1, got 0 along spatial "
                        "axis 0"),
      tpf::ValueError);
  CHECK_THROWS_WITH_AS(
      nn::Conv1D(1, {-1}),
      doctest::Contains("expected kernel extents >= 1, got -1 along spatial "
                        "axis 0"),
      tpf::ValueError);
}
