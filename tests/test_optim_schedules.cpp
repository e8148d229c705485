// tpf::optim learning-rate schedules (against their formulas in plain
// doubles, and driving an optimizer's step) and gradient clipping.
#include <cmath>
#include <limits>

#include "support/optim_fixture.hpp"

using namespace optim_fixture;

TEST_CASE("learning-rate schedules drive the step's learning rate") {
  SUBCASE("piecewise constant on SGD: steps 0 and 1 at 0.1, then 0.01") {
    optim::SGD opt(
        {.learning_rate = std::make_shared<optim::PiecewiseConstantDecay>(
             std::vector<int64_t>{1}, Vec{0.1, 0.01})});
    CHECK(opt.learning_rate() == 0.1);
    const auto w = run3(opt);
    Vec e = kW0;
    const double lrs[] = {0.1, 0.1, 0.01};
    for (int s = 0; s < 3; ++s)
      for (size_t i = 0; i < 3; ++i) e[i] -= lrs[s] * kG[s][i];
    check_vec(w, e);
    CHECK(opt.learning_rate() == 0.01);
  }
  SUBCASE("exponential decay on Adam") {
    auto sched = std::make_shared<optim::ExponentialDecay>(0.1, 2, 0.5);
    optim::Adam opt({.learning_rate = sched});
    const auto w = run3(opt);
    Vec e = kW0, m(3, 0.0), v(3, 0.0);
    for (int t = 1; t <= 3; ++t) {
      const double lr = 0.1 * std::pow(0.5, (t - 1) / 2.0);
      const double lr_t =
          lr * std::sqrt(1 - std::pow(0.999, t)) / (1 - std::pow(0.9, t));
      for (size_t i = 0; i < 3; ++i) {
        const double g = kG[t - 1][i];
        m[i] = 0.9 * m[i] + 0.1 * g;
        v[i] = 0.999 * v[i] + 0.001 * g * g;
        e[i] -= lr_t * m[i] / (std::sqrt(v[i]) + 1e-7);
      }
    }
    check_vec(w, e);
    opt.set_learning_rate(0.5);
    CHECK(opt.learning_rate() == 0.5);
  }
}

TEST_CASE("ExponentialDecay") {
  const optim::ExponentialDecay smooth(0.1, 10, 0.5);
  const optim::ExponentialDecay stairs(0.1, 10, 0.5, true);
  CHECK(smooth(0) == doctest::Approx(0.1).epsilon(1e-14));
  CHECK(smooth(5) == doctest::Approx(0.1 * std::sqrt(0.5)).epsilon(1e-14));
  CHECK(smooth(25) == doctest::Approx(0.1 * std::pow(0.5, 2.5)).epsilon(1e-14));
  CHECK(stairs(9) == doctest::Approx(0.1).epsilon(1e-14));
  CHECK(stairs(10) == doctest::Approx(0.05).epsilon(1e-14));
  CHECK(stairs(25) == doctest::Approx(0.025).epsilon(1e-14));
}

TEST_CASE("PiecewiseConstantDecay: boundaries belong to the left interval") {
  const optim::PiecewiseConstantDecay s({10, 20}, {1.0, 0.5, 0.1});
  CHECK(s(0) == 1.0);
  CHECK(s(10) == 1.0);
  CHECK(s(11) == 0.5);
  CHECK(s(20) == 0.5);
  CHECK(s(21) == 0.1);
  CHECK(s(100000) == 0.1);
}

TEST_CASE("CosineDecay, with and without warm-up (Keras 3)") {
  const optim::CosineDecay c(1.0, 100, 0.1);
  CHECK(c(0) == doctest::Approx(1.0).epsilon(1e-14));
  CHECK(c(50) == doctest::Approx(0.9 * 0.5 + 0.1).epsilon(1e-14));
  CHECK(c(25) ==
        doctest::Approx(0.9 * 0.5 * (1 + std::sqrt(0.5)) + 0.1).epsilon(1e-14));
  CHECK(c(100) == doctest::Approx(0.1).epsilon(1e-14));
  CHECK(c(1000) == doctest::Approx(0.1).epsilon(1e-14));

  // From 0.1 up to 1.0 over 10 steps, then cosine from 1.0 over 100 steps.
  const optim::CosineDecay w(0.1, 100, 0.0, 1.0, 10);
  CHECK(w(0) == doctest::Approx(0.1).epsilon(1e-14));
  CHECK(w(5) == doctest::Approx(0.55).epsilon(1e-14));
  CHECK(w(10) == doctest::Approx(1.0).epsilon(1e-14));
  CHECK(w(60) == doctest::Approx(0.5).epsilon(1e-14));
  CHECK(w(110) == doctest::Approx(0.0));
  CHECK(w(5000) == doctest::Approx(0.0));
}

TEST_CASE("clip_by_value") {
  CHECK_CLOSE(optim::clip_by_value(t64({-3.0, 0.5, 2.0}), -1.0, 1.0),
              t64({-1.0, 0.5, 1.0}));
  const auto v = optim::clip_by_value(
      std::vector<tpf::Tensor>{t64({5.0}), tpf::Tensor(), t64({-5.0})}, -2.0,
      3.0);
  REQUIRE(v.size() == 3);
  CHECK_CLOSE(v[0], t64({3.0}));
  CHECK_FALSE(v[1].defined());
  CHECK_CLOSE(v[2], t64({-2.0}));
}

TEST_CASE("clip_by_norm") {
  CHECK_CLOSE(optim::clip_by_norm(t64({3.0, 4.0}), 2.5), t64({1.5, 2.0}));
  CHECK_CLOSE(optim::clip_by_norm(t64({0.3, 0.4}), 2.5), t64({0.3, 0.4}));
  const auto zero = optim::clip_by_norm(t64({0.0, 0.0}), 1.0);
  CHECK_CLOSE(zero, t64({0.0, 0.0}));  // no NaN
  const auto rows = optim::clip_by_norm(
      tpf::tensor<double>({{3.0, 4.0}, {0.3, 0.4}}), 1.0, {1});
  CHECK_CLOSE(rows, tpf::tensor<double>({{0.6, 0.8}, {0.3, 0.4}}));
  // Differentiable: d/dt of sum(clip(t)) for ||t|| = 5 > 2.5.
  const auto t = t64({3.0, 4.0});
  tpf::GradientTape tape;
  tape.watch(t);
  const auto g = tape.gradient(tpf::sum(optim::clip_by_norm(t, 2.5)), {t})[0];
  // d/dt_j (2.5 sum_i t_i / |t|) = 2.5 (1/|t| - t_j sum_i t_i / |t|^3)
  CHECK_CLOSE(g, t64({2.5 * (0.2 - 3.0 * 7.0 / 125.0),
                      2.5 * (0.2 - 4.0 * 7.0 / 125.0)}));
}

TEST_CASE("clip_by_global_norm") {
  const std::vector<tpf::Tensor> ts = {t64({3.0, 4.0}), tpf::Tensor(),
                                       t64({12.0})};
  CHECK_CLOSE(optim::global_norm(ts), tpf::scalar(13.0, tpf::float64));
  auto [clipped, norm] = optim::clip_by_global_norm(ts, 6.5);
  CHECK_CLOSE(norm, tpf::scalar(13.0, tpf::float64));
  REQUIRE(clipped.size() == 3);
  CHECK_CLOSE(clipped[0], t64({1.5, 2.0}));
  CHECK_FALSE(clipped[1].defined());
  CHECK_CLOSE(clipped[2], t64({6.0}));

  auto [same, n2] = optim::clip_by_global_norm(ts, 20.0);
  CHECK_CLOSE(same[0], t64({3.0, 4.0}));
  CHECK_CLOSE(same[2], t64({12.0}));

  auto [given, n3] =
      optim::clip_by_global_norm(ts, 1.0, tpf::scalar(2.0, tpf::float64));
  CHECK_CLOSE(given[0], t64({1.5, 2.0}));
  CHECK_CLOSE(n3, tpf::scalar(2.0, tpf::float64));

  const double inf = std::numeric_limits<double>::infinity();
  auto [nans, n4] = optim::clip_by_global_norm({t64({inf, 1.0})}, 1.0);
  const auto v = nans[0].to_vector<double>();
  CHECK(std::isnan(v[0]));
  CHECK(std::isnan(v[1]));

  // float32 stays float32.
  auto [f32, n5] = optim::clip_by_global_norm({tpf::tensor({3.f, 4.f})}, 1.0);
  CHECK(f32[0].dtype() == tpf::float32);
  CHECK_CLOSE(f32[0], tpf::tensor({0.6f, 0.8f}));
}

TEST_CASE("clipnorm, clipvalue and global_clipnorm options (Keras)") {
  SUBCASE("clipnorm: each gradient to norm 0.2") {
    optim::SGD opt({.learning_rate = 1.0, .clipnorm = 0.2});
    const auto w = run3(opt);
    Vec e = kW0;
    for (const Vec& g : kG) {
      const double n = std::sqrt(g[0] * g[0] + g[1] * g[1] + g[2] * g[2]);
      for (size_t i = 0; i < 3; ++i) e[i] -= g[i] * 0.2 / std::max(n, 0.2);
    }
    check_vec(w, e);
  }
  SUBCASE("clipvalue: each element to [-0.25, 0.25]") {
    optim::SGD opt({.learning_rate = 1.0, .clipvalue = 0.25});
    const auto w = run3(opt);
    Vec e = kW0;
    for (const Vec& g : kG)
      for (size_t i = 0; i < 3; ++i) e[i] -= std::clamp(g[i], -0.25, 0.25);
    check_vec(w, e);
  }
  SUBCASE("global_clipnorm: two parameters scaled together") {
    tpf::Variable a(t64({1.0, 1.0})), b(t64({1.0}));
    optim::SGD opt({.learning_rate = 1.0, .global_clipnorm = 6.5});
    opt.apply_gradients({t64({3.0, 4.0}), t64({12.0})}, {a, b});
    check_vec(a, {1.0 - 1.5, 1.0 - 2.0});
    check_vec(b, {1.0 - 6.0});
  }
  SUBCASE("weight_decay works on any optimizer") {
    tpf::Variable a(t64({2.0}));
    optim::SGD opt({.learning_rate = 0.1, .weight_decay = 0.5});
    opt.apply_gradients({t64({1.0})}, {a});
    check_vec(a, {2.0 - 0.1 * 0.5 * 2.0 - 0.1 * 1.0});
  }
}
