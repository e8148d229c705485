// Recurrent cells and layers against a reference written here with plain
// loops (Keras' formulas), gradients through time, masks, go_backwards,
// Bidirectional, dropout masks and long sequences.
#include <algorithm>
#include <cmath>
#include <string>

#include "support/check.hpp"
#include "support/temp_files.hpp"

namespace nn = tpf::nn;

namespace {

using Vec = std::vector<double>;
double sig(double v) {
  return 1.0 / (1.0 + std::exp(-v));
}

/** out[j] = sum_i a[i] w[i][j] + bias[j], w row-major (a.size(), cols). */
Vec affine(const Vec& a, const Vec& w, size_t cols, const double* bias) {
  Vec out(cols, 0.0);
  for (size_t j = 0; j < cols; ++j) {
    double s = bias ? bias[j] : 0.0;
    for (size_t i = 0; i < a.size(); ++i) s += a[i] * w[i * cols + j];
    out[j] = s;
  }
  return out;
}

enum class Kind { simple, lstm, gru, gru_before };

struct Weights {
  Vec kernel, recurrent, bias;
};

Weights weights_of(const nn::RecurrentCell& cell) {
  return {cell.kernel().to_vector<double>(),
          cell.recurrent_kernel().to_vector<double>(),
          cell.bias().to_vector<double>()};
}

/** One step of Keras' cell of `kind`: states {h} or {h, c}. */
std::vector<Vec> reference_step(Kind kind, const Vec& x,
                                const std::vector<Vec>& s, const Weights& w) {
  const size_t u = s[0].size();
  const Vec& h = s[0];
  Vec out(u);
  if (kind == Kind::simple) {
    const Vec a = affine(x, w.kernel, u, w.bias.data());
    const Vec b = affine(h, w.recurrent, u, nullptr);
    for (size_t j = 0; j < u; ++j) out[j] = std::tanh(a[j] + b[j]);
    return {out};
  }
  if (kind == Kind::lstm) {
    const Vec a = affine(x, w.kernel, 4 * u, w.bias.data());
    const Vec b = affine(h, w.recurrent, 4 * u, nullptr);
    Vec c(u);
    for (size_t j = 0; j < u; ++j) {
      const auto z = [&](size_t gate) {
        return a[gate * u + j] + b[gate * u + j];
      };
      c[j] = sig(z(1)) * s[1][j] + sig(z(0)) * std::tanh(z(2));
      out[j] = sig(z(3)) * std::tanh(c[j]);
    }
    return {out, c};
  }
  const bool after = kind == Kind::gru;
  const Vec a = affine(x, w.kernel, 3 * u, w.bias.data());
  const Vec b =
      affine(h, w.recurrent, 3 * u, after ? w.bias.data() + 3 * u : nullptr);
  Vec z(u), r(u);
  for (size_t j = 0; j < u; ++j) {
    z[j] = sig(a[j] + b[j]);
    r[j] = sig(a[u + j] + b[u + j]);
  }
  Vec rh(u);
  for (size_t j = 0; j < u; ++j) rh[j] = r[j] * h[j];
  for (size_t j = 0; j < u; ++j) {
    double inner = 0;
    if (after) {
      inner = r[j] * b[2 * u + j];
    } else {
      for (size_t i = 0; i < u; ++i)
        inner += rh[i] * w.recurrent[i * 3 * u + 2 * u + j];
    }
    const double hh = std::tanh(a[2 * u + j] + inner);
    out[j] = z[j] * h[j] + (1 - z[j]) * hh;
  }
  return {out};
}

/** Float64 weights with a bias that matters, seeded. */
nn::RNNOptions float64_options(nn::RNNOptions o = {}) {
  o.dtype = tpf::float64;
  o.kernel_initializer = nn::glorot_uniform(1);
  o.recurrent_initializer = nn::orthogonal(1.0, 2);
  o.bias_initializer = nn::random_uniform_initializer(-0.5, 0.5, 3);
  return o;
}

std::shared_ptr<nn::RNN> make_layer(Kind kind, int64_t units,
                                    nn::RNNOptions o) {
  switch (kind) {
    case Kind::simple:
      return std::make_shared<nn::SimpleRNN>(units, o);
    case Kind::lstm:
      return std::make_shared<nn::LSTM>(units, o);
    case Kind::gru:
      return std::make_shared<nn::GRU>(units, o);
    case Kind::gru_before:
      o.reset_after = false;
      return std::make_shared<nn::GRU>(units, o);
  }
  return {};
}

const char* kind_name(Kind kind) {
  switch (kind) {
    case Kind::simple:
      return "simple_rnn";
    case Kind::lstm:
      return "lstm";
    case Kind::gru:
      return "gru";
    case Kind::gru_before:
      return "gru_reset_before";
  }
  return "";
}

constexpr Kind kKinds[] = {Kind::simple, Kind::lstm, Kind::gru,
                           Kind::gru_before};

/**
 * The reference over a whole (batch, time, in) sequence from zero states:
 * every step's h as (batch, time, u), and the final states.
 */
std::pair<tpf::Tensor, std::vector<tpf::Tensor>> reference_run(
    Kind kind, const nn::RecurrentCell& cell, const tpf::Tensor& x) {
  const Weights w = weights_of(cell);
  const int64_t batch = x.shape()[0], time = x.shape()[1], in = x.shape()[2];
  const size_t u = static_cast<size_t>(cell.units());
  const Vec xs = x.to_vector<double>();
  Vec seq;
  std::vector<Vec> finals(cell.state_count(), Vec{});
  for (int64_t b = 0; b < batch; ++b) {
    std::vector<Vec> s(cell.state_count(), Vec(u, 0.0));
    for (int64_t t = 0; t < time; ++t) {
      const auto* row = xs.data() + (b * time + t) * in;
      s = reference_step(kind, Vec(row, row + in), s, w);
      seq.insert(seq.end(), s[0].begin(), s[0].end());
    }
    for (size_t k = 0; k < s.size(); ++k)
      finals[k].insert(finals[k].end(), s[k].begin(), s[k].end());
  }
  std::vector<tpf::Tensor> states;
  for (const Vec& f : finals)
    states.push_back(tpf::from_vector(f, {batch, int64_t(u)}));
  return {tpf::from_vector(seq, {batch, time, int64_t(u)}), states};
}

}  // namespace

TEST_CASE("cells and layers match Keras' formulas written out by hand") {
  const auto x = testing::uniform64({2, 5, 3});
  for (Kind kind : kKinds) {
    SUBCASE(kind_name(kind)) {
      auto layer = make_layer(
          kind, 4,
          float64_options({.return_sequences = true, .return_state = true}));
      const auto r = layer->call(x);
      const auto [seq, states] = reference_run(kind, layer->cell(), x);
      CHECK_CLOSE(r.output, seq, 1e-12, 1e-12);
      REQUIRE(r.states.size() == states.size());
      for (size_t k = 0; k < states.size(); ++k)
        CHECK_CLOSE(r.states[k], states[k], 1e-12, 1e-12);
      // Without return_sequences: the last step's h; no states.
      auto last = make_layer(kind, 4, float64_options());
      const auto y = (*last)(x);
      CHECK_CLOSE(y, reference_run(kind, last->cell(), x).second[0], 1e-12,
                  1e-12);
      CHECK(last->call(x).states.empty());
    }
  }
}

TEST_CASE("a cell steps by hand as the seeds' unrolled loops do") {
  nn::LSTMCell cell(3, float64_options());
  const auto x = testing::uniform64({2, 4});
  const auto h0 = testing::uniform64({2, 3}), c0 = testing::uniform64({2, 3});
  auto [h, c] = cell(x, {h0, c0});
  const auto w = weights_of(cell);
  for (int64_t b = 0; b < 2; ++b) {
    const auto row = [&](const tpf::Tensor& t, int64_t n) {
      const auto v = t.to_vector<double>();
      return Vec(v.begin() + b * n, v.begin() + (b + 1) * n);
    };
    const auto ref =
        reference_step(Kind::lstm, row(x, 4), {row(h0, 3), row(c0, 3)}, w);
    CHECK_CLOSE(tpf::slice(h, {b, 0}, {1, 3}), tpf::from_vector(ref[0], {1, 3}),
                1e-12, 1e-12);
    CHECK_CLOSE(tpf::slice(c, {b, 0}, {1, 3}), tpf::from_vector(ref[1], {1, 3}),
                1e-12, 1e-12);
  }
  nn::GRUCell gcell(3, float64_options());
  const auto g = gcell(x, h0);
  CHECK(g.shape() == tpf::Shape{2, 3});
  CHECK_THROWS_AS(gcell(x, tpf::zeros({2, 4}, tpf::float64)), tpf::ShapeError);
  CHECK(cell.kernel().shape() == tpf::Shape{4, 12});
  CHECK(cell.recurrent_kernel().shape() == tpf::Shape{3, 12});
  // unit_forget_bias: the forget gate's bias starts at 1, the rest at 0.
  nn::LSTMCell fresh(2);
  (void)fresh(tpf::ones({1, 3}));
  CHECK(fresh.bias().to_vector<float>() ==
        std::vector<float>{0, 0, 1, 1, 0, 0, 0, 0});
}

TEST_CASE(
    "gradients through time: float64 gradcheck of inputs, states, weights") {
  const auto x = testing::uniform64({2, 4, 3});
  for (Kind kind : kKinds) {
    SUBCASE(kind_name(kind)) {
      auto layer = make_layer(
          kind, 3,
          float64_options({.return_sequences = true, .return_state = true}));
      const size_t n = layer->cell().state_count();
      std::vector<tpf::Tensor> inputs{x};
      for (size_t k = 0; k < n; ++k)
        inputs.push_back(testing::uniform64({2, 3}));
      // Through the inputs and the initial states (every output step and
      // the final states feed the loss).
      const auto fn = [&](const std::vector<tpf::Tensor>& in) {
        const std::vector<tpf::Tensor> init(in.begin() + 1, in.end());
        const auto r = layer->call(in[0], {.initial_state = init});
        std::vector<tpf::Tensor> parts{tpf::reshape(r.output, {-1})};
        for (const auto& s : r.states) parts.push_back(tpf::reshape(s, {-1}));
        return tpf::concat(parts, 0);
      };
      const std::string why = testing::gradcheck(fn, inputs);
      CHECK_MESSAGE(why.empty(), why);
      // Through the weights.
      const std::string why_w = testing::gradcheck_variables(
          [&] { return fn(inputs); }, layer->parameters());
      CHECK_MESSAGE(why_w.empty(), why_w);
    }
  }
}

namespace {
/** The steps of (batch, time, ...) in reverse order. */
tpf::Tensor reverse_time(const tpf::Tensor& x) {
  auto steps = tpf::unstack(x, 1);
  std::reverse(steps.begin(), steps.end());
  return tpf::stack(steps, 1);
}
}  // namespace

TEST_CASE("go_backwards walks reversed time; Bidirectional merges both ways") {
  const auto x = testing::uniform64({2, 4, 3});
  nn::LSTM forward(3, float64_options({.return_sequences = true}));
  nn::LSTM backward(
      3, float64_options({.return_sequences = true, .go_backwards = true}));
  CHECK_CLOSE(backward(x), forward(reverse_time(x)), 1e-12, 1e-12);

  nn::Bidirectional bi(nn::LSTM(
      3, float64_options({.return_sequences = true, .return_state = true})));
  const auto r = bi.call(x);
  CHECK(r.output.shape() == tpf::Shape{2, 4, 6});
  CHECK(r.states.size() == 4);
  CHECK_CLOSE(tpf::slice(r.output, {0, 0, 0}, {2, 4, 3}),
              bi.forward_layer().call(x).output, 1e-12, 1e-12);
  const auto back = bi.backward_layer().call(x).output;
  CHECK_CLOSE(tpf::slice(r.output, {0, 0, 3}, {2, 4, 3}), reverse_time(back),
              1e-12, 1e-12);
  // The backward half at step 0 has read the whole sequence.
  CHECK_CLOSE(tpf::slice(r.output, {0, 0, 3}, {2, 1, 3}),
              tpf::reshape(r.states[2], {2, 1, 3}), 1e-12, 1e-12);
  const auto names = bi.named_parameters();
  REQUIRE(names.size() == 6);
  CHECK(names[0].first == "bidirectional/forward_lstm/lstm_cell/kernel");
  CHECK(names[3].first == "bidirectional/backward_lstm/lstm_cell/kernel");

  nn::Bidirectional summed(nn::GRU(2), {.merge_mode = "sum"});
  CHECK(summed(tpf::ones({1, 3, 2})).shape() == tpf::Shape{1, 2});
  CHECK_THROWS_AS(nn::Bidirectional(nn::GRU(2), {.merge_mode = "max"}),
                  tpf::ValueError);
}

TEST_CASE("masked steps carry the states over; mask_zero from Embedding") {
  const auto x = testing::uniform64({2, 5, 3});
  const auto mask = tpf::tensor(
      {{true, true, true, true, true}, {true, true, true, false, false}});
  nn::GRU gru(
      4, float64_options({.return_sequences = true, .return_state = true}));
  const auto r = gru.call(x, {.mask = mask});
  // Row 1 equals the same layer run on its first three steps alone.
  const auto short_run = gru.call(tpf::slice(x, {1, 0, 0}, {1, 3, 3}));
  CHECK_CLOSE(tpf::slice(r.states[0], {1, 0}, {1, 4}), short_run.states[0],
              1e-12, 1e-12);
  CHECK_CLOSE(tpf::slice(r.output, {1, 4, 0}, {1, 1, 4}),
              tpf::slice(r.output, {1, 2, 0}, {1, 1, 4}), 1e-12, 1e-12);
  // Padded steps get no gradient.
  tpf::GradientTape tape;
  tape.watch(x);
  const auto y = gru.call(x, {.mask = mask}).output;
  const auto dx = tape.gradient(tpf::sum(y), {x})[0];
  CHECK(
      tpf::sum(tpf::abs(tpf::slice(dx, {1, 3, 0}, {1, 2, 3}))).item<double>() ==
      0.0);
  nn::GRU zeroing(4, float64_options({.return_sequences = true,
                                      .zero_output_for_mask = true}));
  CHECK(tpf::sum(tpf::abs(tpf::slice(zeroing.call(x, {.mask = mask}).output,
                                     {1, 3, 0}, {1, 2, 4})))
            .item<double>() == 0.0);

  // Sequential passes Embedding's mask of id 0 to the LSTM.
  tpf::manual_seed(4);
  nn::Sequential model;
  auto& emb = model.add(nn::Embedding(10, 3, {.mask_zero = true}));
  auto& lstm = model.add(nn::LSTM(2));
  const auto ids = tpf::tensor<int64_t>({{4, 2, 7, 0, 0}, {1, 0, 0, 0, 0}});
  const auto masked = model(ids);
  const auto explicit_mask =
      lstm.call(emb(ids), {.mask = tpf::not_equal(ids, tpf::zeros_like(ids))});
  CHECK_CLOSE(masked, explicit_mask.output);
  CHECK_CLOSE(tpf::slice(masked, {0, 0}, {1, 2}),
              lstm(emb(tpf::tensor<int64_t>({{4, 2, 7}}))));
}

TEST_CASE("Keras weight names; weights saved by name load into a new layer") {
  nn::LSTM lstm(3);
  (void)lstm(tpf::ones({1, 2, 5}));
  const auto names = lstm.named_parameters();
  REQUIRE(names.size() == 3);
  CHECK(names[0].first == "lstm/lstm_cell/kernel");
  CHECK(names[1].first == "lstm/lstm_cell/recurrent_kernel");
  CHECK(names[2].first == "lstm/lstm_cell/bias");
  nn::GRU gru(2);
  (void)gru(tpf::ones({1, 2, 5}));
  CHECK(gru.named_parameters()[2].first == "gru/gru_cell/bias");
  CHECK(gru.cell().bias().shape() == tpf::Shape{2, 6});
  nn::SimpleRNN rnn(2, {.activation = tpf::tanh});
  (void)rnn(tpf::ones({1, 2, 5}));
  CHECK(rnn.named_parameters()[0].first == "simple_rnn/simple_rnn_cell/kernel");

  // An archive with Keras' names (as a Keras model's weights exported to
  // npz) loads by name; the outputs then follow the reference.
  testing::TempDir dir;
  const std::string path = dir / "lstm.npz";
  tpf::io::NamedTensors arrays;
  nn::LSTM source(3, float64_options());
  const auto x = testing::uniform64({2, 4, 5});
  (void)source(x);
  for (const auto& [name, v] : source.named_parameters())
    arrays.emplace_back(name, v.cast(tpf::float32));
  tpf::io::save_npz(path, arrays);
  nn::LSTM loaded(3);
  (void)loaded(tpf::ones({1, 1, 5}));
  const auto file = tpf::io::load_npz_map(path);
  for (auto& [name, v] : loaded.named_parameters()) v.assign(file.at(name));
  const auto expected = reference_run(Kind::lstm, source.cell(), x).second[0];
  CHECK_CLOSE(loaded(x.cast(tpf::float32)), expected, 1e-5, 1e-6);
}

TEST_CASE("dropout masks: one per sequence, training only, repeatable") {
  const auto x = tpf::ones({3, 6, 4}, tpf::float64);
  nn::SimpleRNN rnn(5, float64_options({.return_sequences = true,
                                        .activation = {},
                                        .dropout = 0.5,
                                        .seed = 7}));
  nn::SimpleRNN plain(
      5, float64_options({.return_sequences = true, .activation = {}}));
  const auto y = rnn(x);
  rnn.eval();
  CHECK_CLOSE(rnn(x), plain(x), 1e-12, 1e-12);
  rnn.train();
  // The same input mask at every step: with a zero recurrent kernel, every
  // step's output is the same row.
  tpf::Variable recurrent = rnn.cell().recurrent_kernel();
  recurrent.assign(tpf::zeros({5, 5}, tpf::float64));
  const auto z = rnn(x);
  const auto steps = tpf::unstack(z, 1);
  for (const auto& s : steps) CHECK_CLOSE(s, steps[0], 0, 0);
  CHECK_MESSAGE(testing::mismatch(z, rnn(x)) != "",
                "a new sequence draws a new mask");
  nn::SimpleRNN again(5, float64_options({.return_sequences = true,
                                          .activation = {},
                                          .dropout = 0.5,
                                          .seed = 7}));
  CHECK_CLOSE(again(x), y, 0, 0);
  CHECK_THROWS_AS(nn::LSTM(2, {.recurrent_dropout = 1.0}), tpf::ValueError);
  // recurrent_dropout trains and differentiates.
  nn::LSTM lstm(3, {.dropout = 0.2, .recurrent_dropout = 0.3, .seed = 1});
  tpf::GradientTape tape;
  const auto loss = tpf::sum(lstm(tpf::ones({2, 5, 4})));
  for (const auto& g : tape.gradient(loss, lstm.parameters()))
    CHECK(g.defined());
}

TEST_CASE("1,000 steps: the tape holds the same bytes per step as at 250") {
  const auto bytes_held = [](int64_t time) {
    nn::LSTM lstm(16, {.return_sequences = true});
    const auto x = tpf::random_uniform({4, time, 8});
    (void)lstm(tpf::slice(x, {0, 0, 0}, {4, 1, 8}));  // build first
    const size_t before = tpf::memory_stats().allocated_bytes;
    tpf::GradientTape tape;
    const auto y = lstm(x);
    const size_t held = tpf::memory_stats().allocated_bytes - before;
    const auto g = tape.gradient(tpf::sum(y), lstm.parameters());
    CHECK(g[0].shape() == tpf::Shape{8, 64});
    return static_cast<double>(held) / time;
  };
  const double per_step_250 = bytes_held(250);
  const double per_step_1000 = bytes_held(1000);
  CHECK(per_step_1000 < 1.1 * per_step_250);
  CHECK(per_step_1000 > 0.9 * per_step_250);
}

TEST_CASE("recurrent errors name the layer, expected and actual") {
  nn::LSTM lstm(3);
  testing::expect_error<tpf::ShapeError>(
      [&] {
        (void)lstm(tpf::ones({2, 4}));
      },
      "[lstm]");
  (void)lstm(tpf::ones({2, 4, 5}));
  testing::expect_error<tpf::ShapeError>(
      [&] {
        (void)lstm(tpf::ones({2, 4, 6}));
      },
      "[lstm");
  testing::expect_error<tpf::ValueError>(
      [&] {
        (void)lstm.call(tpf::ones({2, 4, 5}),
                        {.initial_state = {tpf::zeros({2, 3})}});
      },
      "[lstm]");
  testing::expect_error<tpf::ShapeError>(
      [&] {
        (void)lstm.call(
            tpf::ones({2, 4, 5}),
            {.initial_state = {tpf::zeros({2, 3}), tpf::zeros({3, 3})}});
      },
      "[lstm]");
  testing::expect_error<tpf::ShapeError>(
      [&] {
        (void)lstm.call(tpf::ones({2, 4, 5}), {.mask = tpf::ones({2, 3})});
      },
      "[lstm]");
  testing::expect_error<tpf::ValueError>([] { nn::GRU(0); }, "[gru_cell]");
  testing::expect_error<tpf::DTypeError>(
      [] { nn::SimpleRNN(2, {.dtype = tpf::int32}); }, "[simple_rnn_cell]");
  // No steps: the initial h, or an empty sequence.
  nn::GRU gru(2, {.return_sequences = true});
  CHECK(gru(tpf::ones({3, 0, 4})).shape() == tpf::Shape{3, 0, 2});
}

TEST_CASE("orthogonal initializer: orthonormal columns or rows") {
  const auto tall = nn::orthogonal(1.0, 5)({6, 4}, 6, 4, tpf::float64);
  CHECK_CLOSE(tpf::matmul(tall, tall, true), tpf::eye(4, -1, tpf::float64),
              1e-12, 1e-12);
  const auto wide = nn::orthogonal(2.0, 5)({3, 12}, 3, 12, tpf::float64);
  CHECK_CLOSE(tpf::matmul(wide, wide, false, true),
              tpf::eye(3, -1, tpf::float64) * 4.0, 1e-12, 1e-12);
  CHECK_THROWS_AS(nn::orthogonal()({3}, 3, 3, tpf::float32), tpf::ValueError);
}

TEST_CASE("recurrent: empty batches and zero input features") {
  CHECK(nn::GRU(3)(tpf::ones({0, 5, 4})).shape() == tpf::Shape{0, 3});
  CHECK(nn::SimpleRNN(3)(tpf::ones({0, 5, 4})).shape() == tpf::Shape{0, 3});
  // No inputs: h = tanh(0 + h U) from h = 0 stays 0.
  const tpf::Tensor h = nn::SimpleRNN(3)(tpf::ones({2, 5, 0}));
  CHECK(h.shape() == tpf::Shape{2, 3});
  for (double v : h.to_vector<double>()) CHECK(v == 0.0);
  CHECK(nn::GRU(3)(tpf::ones({2, 5, 0})).shape() == tpf::Shape{2, 3});
}
