// Hostile but realistic arguments to layers and models: each is a
// tapeflow::Error naming the layer the user built or called, at construction
// where the argument alone decides it (never a SIGFPE, a wrapped size, a
// segfault at the first call or an aborted process), and an empty batch
// leaves batch norm's statistics as they were.
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

TEST_CASE("convolution layers refuse filters, groups and multipliers < 1") {
  expect_error<tpf::ValueError>(
      [] {
        nn::Conv2D(2, {3, 3}, {.groups = 0});
      },
      "[conv2d] expected groups >= 1, got 0");
  expect_error<tpf::ValueError>([] { nn::Conv1D(2, 3, {.groups = -2}); },
                                "[conv1d] expected groups >= 1, got -2");
  expect_error<tpf::ValueError>([] { nn::Conv3D(0, {3}); },
                                "[conv3d] expected filters >= 1, got 0");
  expect_error<tpf::ValueError>(
      [] {
        nn::Conv2DTranspose(-1, {3, 3});
      },
      "[conv2d_transpose] expected filters >= 1, got -1");
  expect_error<tpf::ValueError>(
      [] {
        nn::DepthwiseConv2D({3, 3}, 0);
      },
      "[depthwise_conv2d] expected depth_multiplier >= 1, got 0");
  expect_error<tpf::ValueError>(
      [] {
        nn::SeparableConv2D(4, {3, 3}, -1);
      },
      "[separable_conv2d] expected depth_multiplier >= 1, got -1");
  expect_error<tpf::ValueError>(
      [] {
        nn::SeparableConv2D(4, {3, 3}, 1, {.groups = 0});
      },
      "[separable_conv2d] expected groups >= 1, got 0");
  // Each layer is named for its own type, so that two in a model are
  // numbered rather than clashing.
  nn::Sequential model;
  model.add(nn::DepthwiseConv2D({3, 3}));
  model.add(nn::DepthwiseConv2D({3, 3}));
  CHECK(model.children()[1]->name() == "depthwise_conv2d_1");
  CHECK(model(tpf::ones({1, 2, 7, 7})).shape() == tpf::Shape{1, 2, 3, 3});
}

TEST_CASE(
    "layer sizes whose products overflow int64 are refused, not wrapped") {
  // 4 channels * 2^62 is 2^64, which wrapped to an empty layer.
  nn::DepthwiseConv2D depthwise({3, 3}, int64_t{1} << 62);
  expect_error<tpf::ValueError>(
      [&] {
        (void)depthwise(tpf::ones({1, 4, 5, 5}));
      },
      "[depthwise_conv2d] expected channels * depth_multiplier to fit in "
      "int64, got 4 * 4611686018427387904");
  nn::SeparableConv2D separable(2, {3, 3}, int64_t{1} << 62);
  expect_error<tpf::ValueError>(
      [&] {
        (void)separable(tpf::ones({1, 4, 5, 5}));
      },
      "[separable_conv2d] expected channels * depth_multiplier to fit in "
      "int64");
  nn::Conv2D wide(int64_t{1} << 62, {3, 3});
  expect_error<tpf::ValueError>(
      [&] {
        (void)wide(tpf::ones({1, 1, 5, 5}));
      },
      "[conv2d] expected the kernel's fan-out to fit "
      "in int64");
  nn::Conv2D huge_kernel(1, {int64_t{1} << 40, int64_t{1} << 40});
  expect_error<tpf::ValueError>(
      [&] {
        (void)huge_kernel(tpf::ones({1, 1, 5, 5}));
      },
      "[conv2d] expected the kernel's size to fit in int64");
  expect_error<tpf::ValueError>(
      [] { nn::LSTM(int64_t{1} << 61); },
      "[lstm_cell] expected the gates' width (gates * units) to fit in int64");
}

TEST_CASE("batch norm over no channels, and over an empty batch") {
  // C = 0: an empty output, where the running statistics' count divided by 0.
  const auto empty =
      nn::fused_batch_norm(tpf::ones({2, 0, 3}), {}, {}, 1e-3, true,
                           tpf::zeros({0}), tpf::ones({0}));
  CHECK(empty.y.shape() == tpf::Shape{2, 0, 3});
  nn::BatchNormalization no_channels;
  CHECK(no_channels(tpf::ones({2, 0, 3})).numel() == 0);
  // An empty last batch leaves the moving statistics as they were (PyTorch);
  // they went NaN, and with them every later inference.
  nn::BatchNormalization bn;
  (void)bn(tpf::full({4, 3}, 2.0));
  const auto before = bn.named_variables();
  std::vector<std::vector<float>> kept;
  for (const auto& [name, v] : before) kept.push_back(v.to_vector<float>());
  (void)bn(tpf::ones({0, 3}));
  const auto after = bn.named_variables();
  for (size_t i = 0; i < after.size(); ++i) {
    CAPTURE(after[i].first);
    CHECK(after[i].second.to_vector<float>() == kept[i]);
  }
  bn.eval();
  for (float y : bn(tpf::full({1, 3}, 2.0)).to_vector<float>())
    CHECK(std::isfinite(y));
}

TEST_CASE("a null layer, or a model inside itself, is refused") {
  nn::Sequential model;
  expect_error<tpf::ValueError>([&] { model.append(nullptr); },
                                "[sequential] expected a layer, got null");
  expect_error<tpf::ValueError>(
      [] { nn::Bidirectional(std::shared_ptr<nn::RNN>(), {}); },
      "[bidirectional] expected a recurrent layer, got null");
  auto outer = std::make_shared<nn::Sequential>("outer");
  auto inner = std::make_shared<nn::Sequential>("inner");
  inner->add(nn::Dense(2));
  outer->append(inner);
  expect_error<tpf::ValueError>(
      [&] { outer->append(outer); },
      "[outer] expected a layer that does not contain \"outer\", got "
      "\"outer\", which does");
  expect_error<tpf::ValueError>(
      [&] { inner->append(outer); },
      "[inner] expected a layer that does not contain \"inner\", got "
      "\"outer\", which does");
  CHECK(outer->children().size() == 1);
  CHECK((*outer)(tpf::ones({1, 3})).shape() == tpf::Shape{1, 2});
}

TEST_CASE("a moved-from layer is a ValueError, not a null cell") {
  nn::Sequential model;
  nn::LSTM lstm(2);
  model.add(std::move(lstm));  // add() takes the layer by value
  expect_error<tpf::ValueError>(
      [&] {
        (void)lstm(tpf::ones({1, 2, 2}));
      },
      "[lstm] expected a layer, got a moved-from one");
  expect_error<tpf::ValueError>(
      [&] {
        (void)lstm.call(tpf::ones({1, 2, 2}), {});
      },
      "[lstm] expected a layer, got a moved-from one");
  // Its accessors too: they dereferenced the moved-away cell.
  for (const auto& touch : std::vector<std::function<void()>>{
           [&] { (void)lstm.cell(); }, [&] { (void)lstm.options(); },
           [&] {
             (void)lstm.output_mask(tpf::ones({1, 2, 2}), {});
           }})
    expect_error<tpf::ValueError>(
        touch, "[lstm] expected a layer, got a moved-from one");
  nn::Bidirectional both(nn::GRU(2));
  model.add(std::move(both));
  expect_error<tpf::ValueError>(
      [&] { (void)both.forward_layer(); },
      "[bidirectional] expected a layer, got a moved-from one");
  nn::Dense dense(2);
  model.add(std::move(dense));
  expect_error<tpf::ValueError>(
      [&] {
        (void)dense(tpf::ones({1, 2}));
      },
      "[dense] expected a layer, got a moved-from one");
  // The layer moved to is whole.
  CHECK((*model.children()[0])(tpf::ones({1, 2, 2})).shape() ==
        tpf::Shape{1, 2});
}

TEST_CASE("a cell's projected steps check the states a loop hands them") {
  nn::SimpleRNNCell simple(3);
  nn::LSTMCell lstm(3);
  nn::GRUCell gru(3);
  expect_error<tpf::ValueError>(
      [&] {
        (void)lstm.step_projected(tpf::ones({2, 12}), {});
      },
      "[lstm_cell] expected a built cell");
  (void)simple(tpf::ones({2, 5}));
  (void)lstm(tpf::ones({2, 5}), {tpf::zeros({2, 3}), tpf::zeros({2, 3})});
  (void)gru(tpf::ones({2, 5}), tpf::zeros({2, 3}));
  // Each read states[0] or states[1] past the end (a segfault).
  expect_error<tpf::ValueError>(
      [&] {
        (void)simple.step_projected(tpf::ones({2, 3}), {});
      },
      "[simple_rnn_cell] expected 1 state tensors, got 0");
  expect_error<tpf::ValueError>(
      [&] {
        (void)lstm.step_projected(tpf::ones({2, 12}), {tpf::zeros({2, 3})});
      },
      "[lstm_cell] expected 2 state tensors, got 1");
  expect_error<tpf::ValueError>(
      [&] {
        (void)gru.step_projected(tpf::ones({2, 9}), {});
      },
      "[gru_cell] expected 1 state tensors, got 0");
  expect_error<tpf::ShapeError>(
      [&] {
        (void)gru.step_projected(tpf::ones({2, 9}), {tpf::zeros({3, 3})});
      },
      "[gru_cell] expected states of shape (2, 3), got (3, 3)");
  tpf::GradientTape tape;  // the fused walk runs under a tape
  expect_error<tpf::ValueError>(
      [&] {
        (void)lstm.walk_projected(tpf::ones({2, 4, 12}), {}, false, true);
      },
      "[lstm_cell] expected 2 state tensors, got 0");
  const std::vector<tpf::Tensor> hc = {tpf::zeros({2, 3}), tpf::zeros({2, 3})};
  expect_error<tpf::ShapeError>(
      [&] { (void)lstm.walk_projected(tpf::ones({12}), hc, false, true); },
      "[lstm_cell] expected projected inputs (batch, time, 12), got (12,)");
  expect_error<tpf::ShapeError>(
      [&] {
        (void)lstm.step_projected(tpf::ones({2, 8}), hc);
      },
      "[lstm_cell] expected projected inputs (batch, 12), got (2, 8)");
  CHECK(lstm.step_projected(tpf::ones({2, 12}), hc).size() == 2);
}

TEST_CASE(
    "Sequential names a layer the first free name; refusals rename none") {
  nn::Sequential model;
  model.add(nn::GRU(3));
  model.add(nn::GRU(3, {.name = "gru_2"}));
  model.add(nn::GRU(3));  // the count gave "gru_2", taken by the last one
  model.add(nn::GRU(3));
  std::vector<std::string> names;
  for (const auto& c : model.children()) names.push_back(c->name());
  CHECK(names == std::vector<std::string>{"gru", "gru_2", "gru_1", "gru_3"});
  nn::Sequential explicit_first;
  explicit_first.add(nn::Dense(2, {.name = "dense_1"}));
  explicit_first.add(nn::Dense(2));
  CHECK(explicit_first.children()[1]->name() == "dense");

  auto layer = std::make_shared<nn::GRU>(3);
  nn::Sequential twice;
  twice.append(layer);
  expect_error<tpf::ValueError>(
      [&] { twice.append(layer); },
      "[sequential] expected a layer not in the model, got \"gru\" a second "
      "time");
  CHECK(layer->name() == "gru");  // it became "gru_1", and its weights' names
  CHECK(twice.children().size() == 1);
}

TEST_CASE("layers that pass values through pass the mask of padded steps") {
  // Keras' supports_masking: an identity Dropout (eval), an activation, a
  // Dense or a batch norm between an Embedding(mask_zero) and an LSTM
  // leave the padded steps masked, so the padded sequence's output is the
  // unpadded one's.
  const auto make = [](bool between) {
    auto model = std::make_shared<nn::Sequential>();
    model->add(nn::Embedding(
        5, 2,
        {.embeddings_initializer = nn::random_uniform_initializer(-1, 1, 1),
         .mask_zero = true}));
    if (between) {
      model->add(nn::Dropout(0.5));
      model->add(nn::ActivationLayer(nn::tanh, "tanh"));
      model->add(nn::Dense(2, {.kernel_initializer = nn::glorot_uniform(3)}));
    }
    model->add(nn::LSTM(2, {.kernel_initializer = nn::glorot_uniform(4),
                            .recurrent_initializer = nn::orthogonal(1.0, 5)}));
    model->eval();
    return model;
  };
  for (bool between : {false, true}) {
    CAPTURE(between);
    auto model = make(between);
    const auto unpadded = (*model)(tpf::tensor({{3, 1}}));
    CHECK_CLOSE((*model)(tpf::tensor({{3, 1, 0, 0}})), unpadded);
  }
}

TEST_CASE("masked steps before the first real one output zeros") {
  nn::SimpleRNN rnn(1, {.return_sequences = true,
                        .kernel_initializer = nn::constant(1.0),
                        .recurrent_initializer = nn::constant(0.0)});
  const auto h0 = tpf::tensor({{0.5f}});
  const auto out =
      rnn.call(tpf::ones({1, 2, 1}),
               {.mask = tpf::tensor({{false, true}}), .initial_state = {h0}})
          .output;
  CHECK_CLOSE(out, tpf::tensor({{{0.0f}, {std::tanh(1.0f)}}}));
  nn::SimpleRNN last(1, {.kernel_initializer = nn::constant(1.0),
                         .recurrent_initializer = nn::constant(0.0)});
  CHECK_CLOSE(
      last.call(tpf::ones({1, 2, 1}),
                {.mask = tpf::tensor({{false, false}}), .initial_state = {h0}})
          .output,
      tpf::tensor({{0.0f}}));
}

TEST_CASE("layer arguments only NaN or nothing could come of") {
  expect_error<tpf::ValueError>(
      [] { nn::Dropout(std::numeric_limits<double>::quiet_NaN()); },
      "[Dropout] expected a rate in [0, 1), got nan");
  expect_error<tpf::ValueError>(
      [] {
        nn::Pool(nn::Pool::Kind::max, 4, {.ksize = {2, 2, 2, 2}});
      },
      "[Pool] expected 1, 2 or 3 spatial dimensions, got 4");
  // One spatial dimension pools over one.
  nn::Pool pool1(nn::Pool::Kind::max, 1, {.ksize = {2}, .strides = {2}});
  CHECK_CLOSE(pool1(tpf::tensor({{{1.0, 3.0, 2.0, 0.5}}})),
              tpf::tensor({{{3.0, 2.0}}}));
  expect_error<tpf::DTypeError>(
      [] {
        (void)tpf::optim::clip_by_global_norm({tpf::tensor({3, 4})}, 1.0);
      },
      "[clip_by_global_norm] expected floating tensors, got int32 at 0");
  expect_error<tpf::DTypeError>(
      [] {
        (void)tpf::optim::global_norm({tpf::ones({2}), tpf::tensor({3})});
      },
      "[global_norm] expected floating tensors, got int32 at 1");
  expect_error<tpf::IndexError>(
      [] {
        (void)nn::layer_normalization(tpf::ones({2, 3}), -5, {}, {});
      },
      "[layer_normalization] expected begin_axis in [-2, 2), got -5");
}

TEST_CASE("initializers and batch norm statistics as Keras has them") {
  // glorot_uniform's limit is sqrt(3 / max(1, fan_avg)): fans summing below
  // 2 count as 2, so one fan in and none out draws within sqrt(3).
  const auto w = nn::glorot_uniform(1)({4096}, 1, 0, tpf::float64);
  const double most = tpf::max(tpf::abs(w)).item<double>();
  CHECK(most <= std::sqrt(3.0));
  CHECK(most > 0.99 * std::sqrt(3.0));
  expect_error<tpf::DTypeError>(
      [] {
        (void)nn::orthogonal(1.0, 1)({3, 3}, 3, 3, tpf::int32);
      },
      "[orthogonal] expected a floating dtype, got int32");
  auto mean = tpf::Variable(tpf::zeros({2}, tpf::int32));
  expect_error<tpf::DTypeError>(
      [&] {
        (void)nn::fused_batch_norm(tpf::ones({4, 2}), {}, {}, 1e-3, true, mean,
                                   {}, 0.5);
      },
      "[fused_batch_norm] expected a floating running_mean, got int32");
}

TEST_CASE("initializers refuse parameters every weight would be NaN of") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  expect_error<tpf::ValueError>(
      [&] { nn::truncated_normal(0.0, nan); },
      "[truncated_normal] expected a finite stddev >= 0, got nan");
  expect_error<tpf::ValueError>(
      [&] { nn::truncated_normal(0.0, -1.0); },
      "[truncated_normal] expected a finite stddev >= 0, got -1");
  expect_error<tpf::ValueError>(
      [&] { nn::truncated_normal(inf, 1.0); },
      "[truncated_normal] expected a finite mean, got inf");
  expect_error<tpf::ValueError>(
      [&] { nn::variance_scaling(nan); },
      "[variance_scaling] expected a finite scale > 0, got nan");
  expect_error<tpf::ValueError>(
      [&] { nn::variance_scaling(inf); },
      "[variance_scaling] expected a finite scale > 0, got inf");
  expect_error<tpf::ValueError>([&] { nn::orthogonal(nan); },
                                "[orthogonal] expected a finite gain, got nan");
  // A zero stddev is a constant, as in Keras.
  CHECK_CLOSE(nn::truncated_normal(0.5, 0.0, 1)({3}, 1, 1, tpf::float64),
              tpf::full({3}, 0.5, tpf::float64));
}
