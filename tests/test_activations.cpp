// Activations and losses: forward against host formulas, gradcheck,
// stability at extreme logits, label checks.
#include <algorithm>
#include <cmath>
#include <vector>

#include "support/check.hpp"

using testing::map1;
using testing::OpCase;
using Ts = std::vector<tpf::Tensor>;
namespace nn = tpf::nn;

namespace {

tpf::Tensor x23() {
  return tpf::tensor({{0.5, -1.25, 2.0}, {1.5, 0.25, -0.75}});
}

OpCase act(const char* name, tpf::Tensor (*f)(const tpf::Tensor&),
           double (*ref)(double)) {
  return {
      name, [f](const Ts& in) { return f(in[0]); }, {x23()}, map1(x23(), ref)};
}

double elu1(double v) {
  return v > 0 ? v : std::expm1(v);
}

}  // namespace

TEST_CASE("activations: forward, strided, float32 and gradcheck") {
  const std::vector<OpCase> cases = {
      act("relu6", nn::relu6,
          [](double v) { return std::min(std::max(v, 0.0), 6.0); }),
      act(
          "elu", [](const tpf::Tensor& x) { return nn::elu(x); }, elu1),
      act("selu", nn::selu,
          [](double v) {
            return 1.0507009873554805 *
                   (v > 0 ? v : 1.6732632423543772 * std::expm1(v));
          }),
      act("softplus", nn::softplus,
          [](double v) { return std::log1p(std::exp(v)); }),
      act("softsign", nn::softsign,
          [](double v) { return v / (1 + std::abs(v)); }),
      act(
          "leaky_relu", [](const tpf::Tensor& x) { return nn::leaky_relu(x); },
          [](double v) { return v > 0 ? v : 0.2 * v; }),
      act(
          "gelu", [](const tpf::Tensor& x) { return nn::gelu(x); },
          [](double v) {
            return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0)));
          }),
      act(
          "gelu_tanh", [](const tpf::Tensor& x) { return nn::gelu(x, true); },
          [](double v) {
            return 0.5 * v *
                   (1 + std::tanh(std::sqrt(2 / M_PI) *
                                  (v + 0.044715 * v * v * v)));
          }),
      {"crelu",
       [](const Ts& in) { return nn::crelu(in[0]); },
       {x23()},
       tpf::tensor({{0.5, 0.0, 2.0, 0.0, 1.25, 0.0},
                    {1.5, 0.25, 0.0, 0.0, 0.0, 0.75}})},
      {"bias_add",
       [](const Ts& in) { return nn::bias_add(in[0], in[1]); },
       {x23(), tpf::tensor({1.0, 2.0, 3.0})},
       tpf::tensor({{1.5, 0.75, 5.0}, {2.5, 2.25, 2.25}})},
      {"softmax",
       [](const Ts& in) { return nn::softmax(in[0]); },
       {x23()},
       tpf::Tensor()},
      {"log_softmax_axis0",
       [](const Ts& in) { return nn::log_softmax(in[0], 0); },
       {x23()},
       tpf::Tensor()},
  };
  for (const auto& c : cases) testing::run_op_case(c);
}

TEST_CASE("softmax and log_softmax match the formula and survive +-1e4") {
  const auto x = x23();
  const auto v = x.to_vector<double>();
  std::vector<double> want(6);
  for (int r = 0; r < 2; ++r) {
    double z = 0;
    for (int c = 0; c < 3; ++c) z += std::exp(v[r * 3 + c]);
    for (int c = 0; c < 3; ++c) want[r * 3 + c] = std::exp(v[r * 3 + c]) / z;
  }
  CHECK_CLOSE(nn::softmax(x), tpf::from_vector(want, {2, 3}));
  CHECK_CLOSE(tpf::exp(nn::log_softmax(x)), tpf::from_vector(want, {2, 3}));

  const auto extreme = tpf::tensor({{1e4f, 0.f, -1e4f}});
  CHECK_CLOSE(nn::softmax(extreme), tpf::tensor({{1.f, 0.f, 0.f}}));
  CHECK_CLOSE(nn::log_softmax(extreme), tpf::tensor({{0.f, -1e4f, -2e4f}}));
  tpf::GradientTape tape;
  tape.watch(extreme);
  const auto loss = nn::softmax_cross_entropy_with_logits(
      tpf::tensor({{0.f, 1.f, 0.f}}), extreme);
  CHECK(loss.item<float>() == doctest::Approx(1e4));
  CHECK_CLOSE(tape.gradient(loss, {extreme})[0],
              tpf::tensor({{1.f, -1.f, 0.f}}));
  CHECK_CLOSE(nn::softplus(tpf::tensor({1e4, -1e4})), tpf::tensor({1e4, 0.0}));
  CHECK_CLOSE(nn::elu(tpf::tensor({1e4})), tpf::tensor({1e4}));
}

TEST_CASE("losses: forward against formulas and gradcheck") {
  const auto logits = x23();
  const auto probs = tpf::tensor({{0.2, 0.3, 0.5}, {1.0, 0.0, 0.0}});
  const auto binary = tpf::tensor({{1.0, 0.0, 1.0}, {0.0, 1.0, 1.0}});
  const auto lv = logits.to_vector<double>(), bv = binary.to_vector<double>();
  std::vector<double> sig(6), hinge(6);
  for (int i = 0; i < 6; ++i) {
    const double p = 1 / (1 + std::exp(-lv[i]));
    sig[i] = -(bv[i] * std::log(p) + (1 - bv[i]) * std::log(1 - p));
    hinge[i] = std::max(0.0, 1 - (2 * bv[i] - 1) * lv[i]);
  }
  const auto lsm = nn::log_softmax(logits).to_vector<double>();
  const auto pv = probs.to_vector<double>();
  std::vector<double> xent(2, 0.0), sparse = {-lsm[2], -lsm[4]};
  for (int i = 0; i < 6; ++i) xent[i / 3] -= pv[i] * lsm[i];
  // Labels follow the logits to the device of run_op_case's device pass.
  const std::vector<OpCase> cases = {
      {"sigmoid_xent",
       [&](const Ts& in) {
         return nn::sigmoid_cross_entropy_with_logits(binary.to(in[0].device()),
                                                      in[0]);
       },
       {logits},
       tpf::from_vector(sig, {2, 3})},
      {"softmax_xent",
       [&](const Ts& in) {
         return nn::softmax_cross_entropy_with_logits(probs.to(in[0].device()),
                                                      in[0]);
       },
       {logits},
       tpf::from_vector(xent, {2})},
      {"sparse_xent",
       [](const Ts& in) {
         return nn::sparse_softmax_cross_entropy_with_logits(
             tpf::tensor({2, 1}).to(in[0].device()), in[0]);
       },
       {logits},
       tpf::from_vector(sparse, {2})},
      {"l2_loss",
       [](const Ts& in) { return nn::l2_loss(in[0]); },
       {logits},
       tpf::scalar((0.25 + 1.5625 + 4 + 2.25 + 0.0625 + 0.5625) / 2,
                   tpf::float64)},
      {"mse",
       [&](const Ts& in) {
         return nn::mean_squared_error(binary.to(in[0].device()), in[0]);
       },
       {logits},
       tpf::tensor({(0.25 + 1.5625 + 1.0) / 3, (2.25 + 0.5625 + 3.0625) / 3})},
      {"hinge",
       [&](const Ts& in) {
         return nn::hinge_loss(binary.to(in[0].device()), in[0]);
       },
       {logits},
       tpf::from_vector(hinge, {2, 3})},
  };
  for (const auto& c : cases) testing::run_op_case(c);
}

TEST_CASE(
    "sparse softmax cross entropy: wide rows, batch axes, extremes, second "
    "order") {
  // 19 classes: two float32 batches of 8 (four float64 batches of 4) and a
  // tail; labels at both ends of a row.
  const auto logits = testing::uniform64({2, 3, 19}, -3.0, 3.0);
  const auto labels = tpf::tensor({{0, 18, 7}, {9, 1, 17}});
  const auto lv = logits.to_vector<double>();
  const auto yv = labels.to_vector<int64_t>();
  std::vector<double> expected(6);
  for (size_t r = 0; r < 6; ++r) {
    double m = -INFINITY, s = 0;
    for (size_t j = 0; j < 19; ++j) m = std::max(m, lv[r * 19 + j]);
    for (size_t j = 0; j < 19; ++j) s += std::exp(lv[r * 19 + j] - m);
    expected[r] = std::log(s) + m - lv[r * 19 + yv[r]];
  }
  const auto loss_of = [&](const tpf::Tensor& y, const tpf::Tensor& x) {
    return nn::sparse_softmax_cross_entropy_with_logits(y.to(x.device()), x);
  };
  testing::run_op_case({"sparse_xent_19_classes",
                        [&](const Ts& in) { return loss_of(labels, in[0]); },
                        {logits},
                        tpf::from_vector(expected, {2, 3})});
  CHECK_CLOSE(loss_of(labels.cast(tpf::int64), logits),
              tpf::from_vector(expected, {2, 3}));

  // The gradient of the gradient: through the fused op's second output.
  const auto weights = testing::uniform64({2, 3, 19});
  const auto second = [&](const Ts& in) {
    tpf::GradientTape inner;
    inner.watch(in[0]);
    const auto loss = tpf::sum(loss_of(labels, in[0]) * in[1]);
    return inner.gradient(loss, {in[0]})[0] * weights;
  };
  const auto why =
      testing::gradcheck(second, {logits, testing::uniform64({2, 3})});
  CHECK_MESSAGE(why.empty(), why);

  // Far-apart logits: no overflow; a uniform row; a NaN stays in its row.
  const auto extreme =
      tpf::tensor({{0.f, 1e4f, -1e4f}, {-1e4f, -1e4f, -1e4f}, {0.f, NAN, 1.f}});
  tpf::GradientTape tape;
  tape.watch(extreme);
  const auto loss = loss_of(tpf::tensor({1, 0, 2}), extreme);
  const auto l = loss.to_vector<float>();
  CHECK(l[0] == 0.f);
  CHECK(l[1] == doctest::Approx(std::log(3.0)));
  CHECK(std::isnan(l[2]));
  const auto g = tape.gradient(tpf::sum(loss), {extreme})[0].to_vector<float>();
  const float third = 1.f / 3;
  const std::vector<float> finite = {0, 0, 0, -2 * third, third, third};
  for (size_t i = 0; i < finite.size(); ++i)
    CHECK(g[i] == doctest::Approx(finite[i]));
  for (size_t i = 6; i < 9; ++i) CHECK(std::isnan(g[i]));

  // 19 classes, the special values in the vector body: a NaN, a +inf (NaN,
  // as inf - inf is), two -infs (probability 0 of 17 equal ones).
  std::vector<float> wide(3 * 19, 0.5f);
  wide[3] = NAN;
  wide[19 + 10] = INFINITY;
  wide[38 + 2] = wide[38 + 12] = -INFINITY;
  const auto wide_loss =
      loss_of(tpf::tensor({0, 0, 5}), tpf::from_vector(wide, {3, 19}))
          .to_vector<float>();
  CHECK(std::isnan(wide_loss[0]));
  CHECK(std::isnan(wide_loss[1]));
  CHECK(wide_loss[2] == doctest::Approx(std::log(17.0)));

  // No rows: empty loss and gradient.
  const auto none = tpf::zeros({0, 5});
  tpf::GradientTape empty_tape;
  empty_tape.watch(none);
  const auto empty_loss = loss_of(tpf::zeros({0}, tpf::int32), none);
  CHECK(empty_loss.shape() == tpf::Shape{0});
  CHECK(empty_tape.gradient(tpf::sum(empty_loss), {none})[0].shape() ==
        tpf::Shape{0, 5});
}

TEST_CASE("loss and activation errors name the op") {
  const auto logits = tpf::ones({2, 3});
  CHECK_THROWS_AS(
      nn::sparse_softmax_cross_entropy_with_logits(tpf::tensor({0, 3}), logits),
      tpf::IndexError);
  CHECK_THROWS_AS(nn::sparse_softmax_cross_entropy_with_logits(
                      tpf::tensor({0, -1}), logits),
                  tpf::IndexError);
  CHECK_THROWS_AS(nn::sparse_softmax_cross_entropy_with_logits(
                      tpf::tensor({0.5, 1.0}), logits),
                  tpf::DTypeError);
  CHECK_THROWS_AS(nn::sparse_softmax_cross_entropy_with_logits(
                      tpf::tensor({0, 1, 2}), logits),
                  tpf::ShapeError);
  CHECK_THROWS_AS(
      nn::softmax_cross_entropy_with_logits(tpf::ones({2, 2}), logits),
      tpf::ShapeError);
  CHECK_THROWS_AS(nn::bias_add(logits, tpf::ones({2})), tpf::ShapeError);
  CHECK_THROWS_AS(nn::bias_add(logits, tpf::ones({3}), "NCWH"),
                  tpf::ValueError);
  CHECK_THROWS_AS(nn::softmax(logits, 2), tpf::IndexError);
  try {
    (void)nn::sparse_softmax_cross_entropy_with_logits(tpf::tensor({0, 3}),
                                                       logits);
  } catch (const tpf::IndexError& e) {
    const std::string msg = e.what();
    CHECK(msg.rfind("[sparse_softmax_cross_entropy_with_logits]", 0) == 0);
    CHECK(msg.find("[0, 3)") != std::string::npos);
  }
}

TEST_CASE("degenerate inputs: OpCase rows") {
  using testing::degenerate;
  using testing::kNan;
  using testing::zeros64;
  const std::vector<OpCase> cases = {
      degenerate(
          "softmax_no_rows", [](const Ts& in) { return nn::softmax(in[0]); },
          {zeros64({0, 3})}, zeros64({0, 3})),
      degenerate(
          "softmax_empty_axis",
          [](const Ts& in) { return nn::softmax(in[0], -1); },
          {zeros64({2, 0})}, zeros64({2, 0})),
      degenerate(
          "softmax_nan_row", [](const Ts& in) { return nn::softmax(in[0]); },
          {tpf::tensor({{kNan, 1.0}, {0.0, 0.0}})},
          tpf::tensor({{kNan, kNan}, {0.5, 0.5}})),
      degenerate(
          "log_softmax_nan_row",
          [](const Ts& in) { return nn::log_softmax(in[0]); },
          {tpf::tensor({{kNan, 1.0}, {0.0, 0.0}})},
          tpf::tensor({{kNan, kNan}, {-std::log(2.0), -std::log(2.0)}})),
      degenerate(
          "gelu_empty", [](const Ts& in) { return nn::gelu(in[0]); },
          {zeros64({0, 2})}, zeros64({0, 2})),
      degenerate(
          "crelu_empty", [](const Ts& in) { return nn::crelu(in[0]); },
          {zeros64({0, 2})}, zeros64({0, 4})),
      degenerate(
          "sigmoid_nan", [](const Ts& in) { return tpf::sigmoid(in[0]); },
          {tpf::tensor({kNan, 0.0})}, tpf::tensor({kNan, 0.5})),
  };
  for (const auto& c : cases) testing::run_op_case(c);
}

TEST_CASE("slopes at the kinks are TensorFlow's") {
  // softplus'(x) = sigmoid(x), also at 0; the sigmoid cross-entropy's slope
  // is sigmoid(x) - z there too; relu6's is 1 only strictly inside (0, 6).
  const auto slope = [](auto f, const tpf::Tensor& x) {
    tpf::GradientTape tape(true);
    tape.watch(x);
    const auto y = f(x);
    const auto g = tape.gradient(tpf::sum(y), {x})[0];
    return g;
  };
  const auto at0 = tpf::tensor({0.0, 0.0});
  CHECK_CLOSE(slope([](const tpf::Tensor& x) { return nn::softplus(x); }, at0),
              tpf::tensor({0.5, 0.5}));
  {
    tpf::GradientTape outer;
    outer.watch(at0);
    tpf::GradientTape inner;
    inner.watch(at0);
    const auto g = inner.gradient(tpf::sum(nn::softplus(at0)), {at0})[0];
    CHECK_CLOSE(outer.gradient(tpf::sum(g), {at0})[0],
                tpf::tensor({0.25, 0.25}));
  }
  CHECK_CLOSE(slope(
                  [](const tpf::Tensor& x) {
                    return nn::sigmoid_cross_entropy_with_logits(
                        tpf::tensor({1.0, 0.0}), x);
                  },
                  at0),
              tpf::tensor({-0.5, 0.5}));
  CHECK_CLOSE(slope([](const tpf::Tensor& x) { return nn::relu6(x); },
                    tpf::tensor({-1.0, 0.0, 3.0, 6.0, 7.0})),
              tpf::tensor({0.0, 0.0, 1.0, 0.0, 0.0}));
  const double nan = std::nan("");
  const auto values =
      nn::relu6(tpf::tensor({-1.0, 0.1, 6.0, 9.0, nan})).to_vector<double>();
  CHECK(values[0] == 0.0);
  CHECK(values[1] == 0.1);
  CHECK(values[2] == 6.0);
  CHECK(values[3] == 6.0);
  CHECK(std::isnan(values[4]));
  CHECK(std::isnan(nn::softplus(tpf::tensor({nan})).item<double>()));
}
