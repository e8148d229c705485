// The LSTM layer's fused walk (one recorded op with a closed-form gradient,
// nn/lstm_sequence.cpp) against the same layer stepped op by op: the same
// values to a few ulp (its fused cell, nn/lstm_cell_ops.hpp, takes xsimd's
// batch math along each row where the op-by-op kernels take scalar math at
// their tails), the same gradients of every input, state and weight,
// over both directions and every output choice; the op-by-op walk where a
// second order is recorded, where the dtypes differ, a Variable's values as
// the forward read them, and a plain initial state written in place refused.
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "core/creation_internal.hpp"
#include "nn/lstm_cell_ops.hpp"
#include "ops/apply.hpp"
#include "support/check.hpp"
#include "tapeflow/profiler.hpp"

namespace nn = tpf::nn;

namespace {

/** Weights from fixed seeds; `stepwise`: the same activations behind
 * lambdas, which the fused walk does not recognize. */
nn::RNNOptions options(bool stepwise, nn::RNNOptions o = {},
                       tpf::DType dtype = tpf::float64) {
  o.dtype = dtype;
  o.kernel_initializer = nn::glorot_uniform(1);
  o.recurrent_initializer = nn::orthogonal(1.0, 2);
  o.bias_initializer = nn::random_uniform_initializer(-0.5, 0.5, 3);
  if (stepwise) {
    o.activation = [](const tpf::Tensor& t) { return nn::tanh(t); };
    o.recurrent_activation = [](const tpf::Tensor& t) {
      return nn::sigmoid(t);
    };
  }
  return o;
}

/** The layer's outputs and final states, flattened into one vector. */
tpf::Tensor flat_result(nn::LSTM& layer, const std::vector<tpf::Tensor>& in) {
  const auto r = layer.call(in[0], {.initial_state = {in[1], in[2]}});
  std::vector<tpf::Tensor> parts{tpf::reshape(r.output, {-1})};
  for (const auto& s : r.states) parts.push_back(tpf::reshape(s, {-1}));
  return tpf::concat(parts, 0);
}

/**
 * {y, d<y, w>/d(x, h0, c0, kernel, recurrent kernel, bias)} on one tape,
 * and the ops it recorded; `between` runs after the forward.
 */
struct Run {
  std::vector<tpf::Tensor> values;
  size_t recorded = 0;
};
Run run(nn::LSTM& layer, const std::vector<tpf::Tensor>& in,
        const std::function<void()>& between = {}) {
  tpf::GradientTape tape;
  for (const auto& x : in) tape.watch(x);
  const auto y = flat_result(layer, in);
  if (between) between();
  const auto w =
      tpf::cos(tpf::cast(tpf::arange(int64_t{0}, y.shape()[0]), y.dtype()));
  std::vector<tpf::Tensor> sources = in;
  for (const auto& p : layer.parameters()) sources.push_back(p);
  Run r;
  r.recorded = tape.size();
  r.values = tape.gradient(tpf::sum(y * w), sources);
  r.values.insert(r.values.begin(), y);
  return r;
}

void check_same(const Run& fused, const Run& stepwise, double tol) {
  REQUIRE(fused.values.size() == stepwise.values.size());
  for (size_t k = 0; k < fused.values.size(); ++k) {
    CAPTURE(k);
    CHECK_CLOSE(fused.values[k], stepwise.values[k], tol, tol);
  }
}

std::vector<tpf::Tensor> inputs(int64_t batch, int64_t time,
                                tpf::DType dtype = tpf::float64) {
  return {testing::uniform64({batch, time, 4}).cast(dtype),
          testing::uniform64({batch, 6}).cast(dtype),
          testing::uniform64({batch, 6}).cast(dtype)};
}

}  // namespace

TEST_CASE("the fused LSTM walk is the op-by-op walk, values and gradients") {
  for (const bool backwards : {false, true})
    for (const bool sequences : {false, true}) {
      CAPTURE(backwards);
      CAPTURE(sequences);
      const nn::RNNOptions o{.return_sequences = sequences,
                             .return_state = true,
                             .go_backwards = backwards};
      nn::LSTM fused(6, options(false, o)), stepwise(6, options(true, o));
      const auto in = inputs(3, 5);
      const Run a = run(fused, in), b = run(stepwise, in);
      check_same(a, b, 1e-12);
      // The fused walk was taken: a few ops in all, against ~15 a step.
      CHECK(a.recorded < 12);
      CHECK(b.recorded > 5 * 12);
    }
  // float32, one step, and no rows.
  for (const auto& [batch, time] : {std::pair{3, 1}, {0, 4}}) {
    CAPTURE(batch);
    nn::LSTM fused(6, options(false, {.return_state = true}, tpf::float32));
    nn::LSTM stepwise(6, options(true, {.return_state = true}, tpf::float32));
    const auto in = inputs(batch, time, tpf::float32);
    check_same(run(fused, in), run(stepwise, in), 1e-6);
  }
}

TEST_CASE("the fused LSTM walk: gradcheck, second order, partial outputs") {
  const auto in = inputs(2, 4);
  const nn::RNNOptions o{.return_sequences = true, .return_state = true};
  nn::LSTM layer(6, options(false, o)), stepwise(6, options(true, o));
  const auto fn = [&](const std::vector<tpf::Tensor>& x) {
    return flat_result(layer, x);
  };
  std::string why = testing::gradcheck(fn, in);
  CHECK_MESSAGE(why.empty(), why);
  why =
      testing::gradcheck_variables([&] { return fn(in); }, layer.parameters());
  CHECK_MESSAGE(why.empty(), why);

  // Second order, an outer tape recording the inner gradient: op by op.
  const auto second = [&](nn::LSTM& l) {
    (void)flat_result(l, in);  // builds the layer: its weights exist
    std::vector<tpf::Tensor> sources = in;
    for (const auto& p : l.parameters()) sources.push_back(p);
    tpf::GradientTape outer;
    for (const auto& x : in) outer.watch(x);
    tpf::Tensor g;
    {
      tpf::GradientTape inner;
      inner.watch(in[0]);
      g = inner.gradient(tpf::sum(tpf::square(flat_result(l, in))), {in[0]})[0];
    }
    return outer.gradient(tpf::sum(g * g), sources);
  };
  const auto a = second(layer), b = second(stepwise);
  REQUIRE(a.size() == 6);
  REQUIRE(b.size() == 6);
  for (size_t k = 0; k < a.size(); ++k) {
    CAPTURE(k);
    CHECK_CLOSE(a[k], b[k], 1e-10, 1e-10);
  }

  // Only the last c feeds the loss: the other outputs' gradients are zeros.
  for (const bool sequences : {false, true}) {
    CAPTURE(sequences);
    const nn::RNNOptions p{.return_sequences = sequences, .return_state = true};
    nn::LSTM f(6, options(false, p)), s(6, options(true, p));
    const auto last_c = [&](nn::LSTM& l) {
      tpf::GradientTape tape;
      tape.watch(in[0]);
      const auto r = l.call(in[0], {.initial_state = {in[1], in[2]}});
      return tape.gradient(tpf::sum(r.states[1]), {in[0]})[0];
    };
    CHECK_CLOSE(last_c(f), last_c(s), 1e-12, 1e-12);
  }
}

TEST_CASE("the fused LSTM walk reads weights as the forward saw them") {
  // The recurrent kernel assigned between the forward and the gradient: the
  // gradient is the forward's, as the op-by-op tape's saved tensors give.
  const auto in = inputs(2, 3);
  nn::LSTM fused(6, options(false)), stepwise(6, options(true));
  const auto bump = [](nn::LSTM& l) {
    return [&l] {
      auto params = l.parameters();
      params[1].assign_add(tpf::ones_like(params[1]));
    };
  };
  check_same(run(fused, in, bump(fused)), run(stepwise, in, bump(stepwise)),
             1e-12);

  // A plain initial state written in place between the forward and the
  // gradient (as a collective writes its buffer): refused by both walks.
  for (const size_t state : {1, 2}) {
    CAPTURE(state);
    const auto overwritten = [state](nn::LSTM& l) {
      const auto in = inputs(2, 3);
      return run(l, in, [&] {
        tpf::write_into(in[state], tpf::zeros_like(in[state]), "test");
      });
    };
    CHECK_THROWS_WITH_AS(overwritten(fused),
                         doctest::Contains("[LSTM] expected saved state"),
                         tpf::ValueError);
    CHECK_THROWS_AS(overwritten(stepwise), tpf::ValueError);
  }

  // float64 inputs into float32 weights: op by op, as before.
  nn::LSTM narrow(6, options(false, {}, tpf::float32));
  nn::LSTM narrow_step(6, options(true, {}, tpf::float32));
  const auto mixed = inputs(2, 3);
  const Run a = run(narrow, mixed), b = run(narrow_step, mixed);
  CHECK(a.recorded == b.recorded);
  for (size_t k = 0; k < a.values.size(); ++k) {
    CAPTURE(k);
    CHECK_CLOSE(a.values[k], b.values[k], 0.0, 0.0);
  }
}

TEST_CASE(
    "the fused LSTM walk: zero states, a persistent tape, Bidirectional") {
  // Default (zero) initial states and two gradients from one persistent tape.
  const auto x = testing::uniform64({2, 4, 4});
  nn::LSTM fused(6, options(false, {.return_sequences = true}));
  nn::LSTM stepwise(6, options(true, {.return_sequences = true}));
  const auto twice = [&](nn::LSTM& l) {
    tpf::GradientTape tape(true);
    const auto y = tpf::sum(tpf::square(l(x)));
    const auto first = tape.gradient(y, l.parameters());
    const auto again = tape.gradient(y, l.parameters());
    for (size_t k = 0; k < first.size(); ++k)
      CHECK_CLOSE(again[k], first[k], 0.0, 0.0);
    return first;
  };
  const auto a = twice(fused), b = twice(stepwise);
  REQUIRE(a.size() == b.size());
  for (size_t k = 0; k < a.size(); ++k) CHECK_CLOSE(a[k], b[k], 1e-12, 1e-12);

  // Both halves of a Bidirectional walk fused, one of them backwards.
  nn::Bidirectional bi(nn::LSTM(3, options(false, {.return_sequences = true})));
  nn::Bidirectional bi_step(
      nn::LSTM(3, options(true, {.return_sequences = true})));
  const auto grads = [&](nn::Bidirectional& l) {
    tpf::GradientTape tape;
    tape.watch(x);
    const auto y = l(x);
    std::vector<tpf::Tensor> sources{x};
    for (const auto& p : l.parameters()) sources.push_back(p);
    return tape.gradient(tpf::sum(y * y), sources);
  };
  const auto c = grads(bi), d = grads(bi_step);
  REQUIRE(c.size() == 7);
  REQUIRE(d.size() == 7);
  for (size_t k = 0; k < c.size(); ++k) CHECK_CLOSE(c[k], d[k], 1e-12, 1e-12);
}

namespace {

/** The cell's formulas, element by element in float64 (rows, units). */
struct CellReference {
  std::vector<double> i, f, g, o, c_next, tanh_c, h, dz, dc_prev;
};
CellReference cell_reference(const std::vector<double>& z,
                             const std::vector<double>& c,
                             const std::vector<double>& dh,
                             const std::vector<double>& dc, int64_t units) {
  const auto sigmoid = [](double v) { return 1 / (1 + std::exp(-v)); };
  CellReference r;
  r.dz.resize(4 * c.size());
  for (size_t at = 0; at < c.size(); ++at) {
    const size_t row = at / units, k = at % units, zr = row * 4 * units + k;
    const double i = sigmoid(z[zr]), f = sigmoid(z[zr + units]),
                 g = std::tanh(z[zr + 2 * units]),
                 o = sigmoid(z[zr + 3 * units]);
    const double c_next = f * c[at] + i * g, tanh_c = std::tanh(c_next);
    for (auto [list, v] : {std::pair{&r.i, i},
                           {&r.f, f},
                           {&r.g, g},
                           {&r.o, o},
                           {&r.c_next, c_next},
                           {&r.tanh_c, tanh_c},
                           {&r.h, o * tanh_c}})
      list->push_back(v);
    const double d = dc[at] + dh[at] * o * (1 - tanh_c * tanh_c);
    r.dz[zr] = d * g * i * (1 - i);
    r.dz[zr + units] = d * c[at] * f * (1 - f);
    r.dz[zr + 2 * units] = d * i * (1 - g * g);
    r.dz[zr + 3 * units] = dh[at] * tanh_c * o * (1 - o);
    r.dc_prev.push_back(d * f);
  }
  return r;
}

}  // namespace

TEST_CASE("the fused LSTM cell ops against their formulas, and their errors") {
  // 19 units: two float32 batches and a scalar tail in each row (four and a
  // tail in float64); c and dh reach the ops as strided views.
  const int64_t rows = 3, units = 19;
  const auto z = testing::uniform64({rows, 4 * units}, -3.0, 3.0);
  const auto c = tpf::transpose(testing::uniform64({units, rows}), {1, 0});
  const auto dh =
      tpf::slice(testing::uniform64({rows, 2 * units}), {0, 3}, {rows, units});
  const auto dc = testing::uniform64({rows, units});
  const auto want =
      cell_reference(z.to_vector<double>(), c.to_vector<double>(),
                     dh.to_vector<double>(), dc.to_vector<double>(), units);
  for (const auto& [dtype, tol] :
       {std::pair{tpf::float64, 1e-14}, {tpf::float32, 2e-6}}) {
    CAPTURE(tpf::dtype_name(dtype));
    auto as = [dtype](const tpf::Tensor& t) {
      return t.dtype() == dtype ? t : t.cast(dtype);
    };
    const auto fwd = tpf::apply(tpf::LstmCellForward{}, {as(z), as(c)});
    const std::vector<double>* fwd_want[] = {
        &want.i,      &want.f,      &want.g, &want.o,
        &want.c_next, &want.tanh_c, &want.h};
    for (int k = 0; k < 7; ++k) {
      CAPTURE(k);
      CHECK(fwd[k].shape() == tpf::Shape{rows, units});
      CHECK_CLOSE(fwd[k], tpf::from_vector(*fwd_want[k], {rows, units}), tol,
                  tol);
    }
    // The backward from the float64 reference gates, so that its own
    // rounding is all the float32 case adds.
    std::vector<tpf::Tensor> in;
    for (const auto* v : {&want.i, &want.f, &want.g, &want.o})
      in.push_back(as(tpf::from_vector(*v, {rows, units})));
    in.push_back(as(c));
    in.push_back(as(tpf::from_vector(want.tanh_c, {rows, units})));
    in.push_back(as(dh));
    in.push_back(as(dc));
    const auto bwd =
        tpf::apply(tpf::LstmCellBackward{}, tpf::Inputs(in.data(), in.size()));
    CHECK_CLOSE(bwd[0], tpf::from_vector(want.dz, {rows, 4 * units}), tol, tol);
    CHECK_CLOSE(bwd[1], tpf::from_vector(want.dc_prev, {rows, units}), tol,
                tol);
  }
  CHECK_THROWS_WITH_AS(
      tpf::apply(tpf::LstmCellForward{}, {z, tpf::slice(c, {0, 0}, {2, 19})}),
      doctest::Contains("[lstm_cell_forward] expected operand 1 of shape "
                        "(3, 19), got (2, 19)"),
      tpf::ShapeError);
  CHECK_THROWS_WITH_AS(
      tpf::apply(tpf::LstmCellForward{}, {z, c.cast(tpf::float32)}),
      doctest::Contains("[lstm_cell_forward] expected operand 1 of dtype "
                        "float64"),
      tpf::DTypeError);
  std::vector<tpf::Tensor> eight(8, dc);
  eight[5] = z;
  CHECK_THROWS_AS(tpf::apply(tpf::LstmCellBackward{},
                             tpf::Inputs(eight.data(), eight.size())),
                  tpf::ShapeError);
}

TEST_CASE(
    "the LSTM layer takes the fused cell on the CPU, with a tape or not") {
  nn::LSTM fused(6, options(false, {.return_sequences = true}));
  const auto in = inputs(3, 4);
  tpf::profiler::start();
  run(fused, in);
  const auto report = tpf::profiler::stop();
  int forward = 0, backward = 0, sigmoids = 0;
  for (const auto& e : report.events()) {
    forward += e.name == "lstm_cell_forward";
    backward += e.name == "lstm_cell_backward";
    sigmoids += e.name == "sigmoid";
  }
  CHECK(forward == 4);
  CHECK(backward == 4);
  CHECK(sigmoids == 0);

  // Without a tape each step takes the same fused cell: the layer gives the
  // values it gives under a tape, to the bit.
  tpf::profiler::start();
  const auto untaped = flat_result(fused, in);
  const auto steps = tpf::profiler::stop();
  const auto taped = [&] {
    tpf::GradientTape tape;
    return flat_result(fused, in);
  }();
  CHECK_CLOSE(untaped, taped, 0.0, 0.0);
  int untaped_cells = 0;
  for (const auto& e : steps.events())
    untaped_cells += e.name == "lstm_cell_forward";
  CHECK(untaped_cells == 4);
}
