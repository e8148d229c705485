// Hostile but realistic arguments to layers, models, the thread settings and
// the functions around training: each is a tapeflow::Error naming the layer,
// setting or function the user called, at construction where the argument
// alone decides it (never a SIGFPE, a wrapped size, a segfault at the first
// call, an aborted process or another function's name), and an empty batch
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
