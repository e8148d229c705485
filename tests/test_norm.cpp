// Normalization (fused batch norm, batch_normalization, moments, layer norm)
// and dropout: hand formulas, running averages, float64 gradcheck, errors.
#include <cmath>

#include "support/check.hpp"

using testing::uniform64;
using Ts = std::vector<tpf::Tensor>;
namespace nn = tpf::nn;

using testing::expect_error;

namespace {

/** Per-channel mean and biased variance of (N, C, S...) by host loops. */
std::pair<std::vector<double>, std::vector<double>> channel_stats(
    const tpf::Tensor& x) {
  const int64_t n = x.shape()[0], c = x.shape()[1], s = x.numel() / (n * c);
  const auto v = x.to_vector<double>();
  std::vector<double> m(c, 0.0), var(c, 0.0);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < c; ++j)
      for (int64_t k = 0; k < s; ++k) m[j] += v[(i * c + j) * s + k];
  for (auto& e : m) e /= n * s;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < c; ++j)
      for (int64_t k = 0; k < s; ++k) {
        const double d = v[(i * c + j) * s + k] - m[j];
        var[j] += d * d;
      }
  for (auto& e : var) e /= n * s;
  return {m, var};
}

/** (x - m) / sqrt(v + eps) * scale + offset by host loops. */
tpf::Tensor hand_bn(const tpf::Tensor& x, const std::vector<double>& m,
                    const std::vector<double>& v, const tpf::Tensor& scale,
                    const tpf::Tensor& offset, double eps) {
  const int64_t n = x.shape()[0], c = x.shape()[1], s = x.numel() / (n * c);
  auto y = x.to_vector<double>();
  const auto g = scale.to_vector<double>(), b = offset.to_vector<double>();
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < c; ++j)
      for (int64_t k = 0; k < s; ++k) {
        double& e = y[(i * c + j) * s + k];
        e = (e - m[j]) / std::sqrt(v[j] + eps) * g[j] + b[j];
      }
  return tpf::from_vector(y, x.shape());
}

}  // namespace

TEST_CASE("fused_batch_norm training: forward, statistics, running update") {
  const auto x = uniform64({4, 3, 5, 2}) * 2.0 + 0.5;
  const auto scale = uniform64({3}, 0.5, 1.5), offset = uniform64({3});
  const auto [m, v] = channel_stats(x);
  const double eps = 1e-3;
  const auto expect = hand_bn(x, m, v, scale, offset, eps);
  for (auto dt : {tpf::float64, tpf::float32}) {
    CAPTURE(tpf::dtype_name(dt));
    tpf::Variable rm(tpf::full({3}, 0.25, dt)), rv(tpf::ones({3}, dt));
    const auto r = nn::fused_batch_norm(
        x.cast(dt), scale.cast(dt), offset.cast(dt), eps, true, rm, rv, 0.9);
    CHECK(r.y.dtype() == dt);
    const double tol = dt == tpf::float64 ? 1e-12 : 1e-5;
    CHECK_CLOSE(r.y.cast(tpf::float64), expect, tol, tol);
    CHECK_CLOSE(r.batch_mean.cast(tpf::float64), tpf::from_vector(m, {3}), tol,
                tol);
    CHECK_CLOSE(r.batch_var.cast(tpf::float64), tpf::from_vector(v, {3}), tol,
                tol);
    // running = 0.9 * running + 0.1 * batch, unbiased variance (n = 40).
    std::vector<double> erm, erv;
    for (int j = 0; j < 3; ++j) {
      erm.push_back(0.9 * 0.25 + 0.1 * m[j]);
      erv.push_back(0.9 * 1.0 + 0.1 * v[j] * 40.0 / 39.0);
    }
    CHECK_CLOSE(rm.cast(tpf::float64), tpf::from_vector(erm, {3}), tol, tol);
    CHECK_CLOSE(rv.cast(tpf::float64), tpf::from_vector(erv, {3}), tol, tol);
  }
  // Absent scale and offset are 1 and 0; rank 2 (N, C) works too.
  const auto x2 = uniform64({6, 4});
  const auto [m2, v2] = channel_stats(x2);
  CHECK_CLOSE(nn::fused_batch_norm(x2, {}, {}, 1e-5).y,
              hand_bn(x2, m2, v2, tpf::ones({4}, tpf::float64),
                      tpf::zeros({4}, tpf::float64), 1e-5));
}

TEST_CASE("fused_batch_norm inference uses the running statistics") {
  const auto x = uniform64({3, 2, 4});
  const auto scale = uniform64({2}, 0.5, 1.5), offset = uniform64({2});
  const std::vector<double> m{0.1, -0.2}, v{0.5, 2.0};
  const auto rm = tpf::from_vector(m, {2}), rv = tpf::from_vector(v, {2});
  const auto expect = hand_bn(x, m, v, scale, offset, 1e-3);
  for (auto dt : {tpf::float64, tpf::float32}) {
    const auto r =
        nn::fused_batch_norm(x.cast(dt), scale.cast(dt), offset.cast(dt), 1e-3,
                             false, rm.cast(dt), rv.cast(dt));
    CHECK_CLOSE(r.y.cast(tpf::float64), expect, 1e-5, 1e-6);
  }
  // The composite batch_normalization gives the same numbers.
  CHECK_CLOSE(nn::batch_normalization(x, tpf::reshape(rm, {1, 2, 1}),
                                      tpf::reshape(rv, {1, 2, 1}),
                                      tpf::reshape(offset, {1, 2, 1}),
                                      tpf::reshape(scale, {1, 2, 1}), 1e-3),
              expect);
}

TEST_CASE("fused_batch_norm's OpCase rows; float32 gradients agree") {
  // Training and inference (running statistics held fixed), and the batch
  // statistics as outputs: gradcheck, strided inputs and every device (the
  // CUDA kernels' moments, normalization and gradient against the CPU's).
  // Forward values: the hand checks above.
  const auto x = uniform64({3, 2, 3, 2}) + 0.3;
  const auto scale = uniform64({2}, 0.5, 1.5), offset = uniform64({2});
  const auto rm = uniform64({2}), rv = uniform64({2}, 0.5, 1.5);
  const auto normalized = [&](bool training) {
    return [=](const Ts& in) {
      const auto fixed = [&](const tpf::Tensor& t) {
        return t.cast(in[0].dtype()).to(in[0].device());
      };
      return nn::fused_batch_norm(in[0], in[1], in[2], 1e-3, training,
                                  fixed(rm), fixed(rv))
          .y;
    };
  };
  const std::vector<testing::OpCase> cases = {
      {"fused_batch_norm_training", normalized(true), {x, scale, offset}, {}},
      {"fused_batch_norm_inference", normalized(false), {x, scale, offset}, {}},
      {"fused_batch_norm_statistics",
       [](const Ts& in) {
         const auto r = nn::fused_batch_norm(in[0], {}, {}, 1e-3);
         return r.y * 0.5 +
                tpf::reshape(r.batch_mean * r.batch_var, {1, 2, 1, 1});
       },
       {x},
       {}},
  };
  for (const auto& c : cases) testing::run_op_case(c);
  // The float32 kernels' gradients against the float64 ones.
  const auto g = uniform64(x.shape());
  for (bool training : {true, false}) {
    CAPTURE(training);
    const auto f = normalized(training);
    auto grads = [&](tpf::DType dt) {
      Ts in{x.cast(dt), scale.cast(dt), offset.cast(dt)};
      tpf::GradientTape tape;
      for (auto& t : in) tape.watch(t);
      return tape.gradient(f(in), in, {g.cast(dt)});
    };
    const auto g64 = grads(tpf::float64), g32 = grads(tpf::float32);
    for (int i = 0; i < 3; ++i)
      CHECK_CLOSE(g32[i].cast(tpf::float64), g64[i], 1e-4, 1e-5);
  }
}

TEST_CASE("fused_batch_norm on long rows: vector batches, streaming stores") {
  // Rows of 35 (vector batches and a scalar tail) for the float64
  // gradcheck; rows of 257 over 8 MiB of float32 (non-temporal stores from
  // a misaligned start) against float64 and the hand formula.
  const auto x = uniform64({2, 3, 5, 7}) * 2.0 + 0.5;
  const auto scale = uniform64({3}, 0.5, 1.5), offset = uniform64({3});
  const auto rm = uniform64({3}), rv = uniform64({3}, 0.5, 1.5);
  for (bool training : {true, false}) {
    CAPTURE(training);
    const auto why = testing::gradcheck(
        [&](const Ts& in) {
          return nn::fused_batch_norm(in[0], in[1], in[2], 1e-3, training, rm,
                                      rv)
              .y;
        },
        {x, scale, offset});
    CHECK_MESSAGE(why.empty(), why);
  }
  const auto big = uniform64({8, 4, 256, 257}) * 2.0 + 0.5;
  const auto s4 = uniform64({4}, 0.5, 1.5), o4 = uniform64({4});
  const auto dy = uniform64(big.shape());
  auto run = [&](tpf::DType dt) {
    Ts in{big.cast(dt), s4.cast(dt), o4.cast(dt)};
    tpf::GradientTape tape;
    for (auto& t : in) tape.watch(t);
    const auto y = nn::fused_batch_norm(in[0], in[1], in[2], 1e-3).y;
    Ts out = tape.gradient(y, in, {dy.cast(dt)});
    out.push_back(y);
    for (auto& t : out) t = t.cast(tpf::float64);
    return out;
  };
  const auto r64 = run(tpf::float64), r32 = run(tpf::float32);
  const auto [m, v] = channel_stats(big);
  CHECK_CLOSE(r64[3], hand_bn(big, m, v, s4, o4, 1e-3), 1e-10, 1e-12);
  CHECK_CLOSE(r32[3], r64[3], 1e-5, 1e-5);
  for (int i = 0; i < 3; ++i) CHECK_CLOSE(r32[i], r64[i], 1e-4, 1e-5);
}

TEST_CASE("fused_batch_norm gradient by channels: gradcheck, composite") {
  // At least four channels a thread and rows of 1 KiB or more: the gradient
  // takes both passes channel by channel. float64 gradcheck on a small
  // tensor, then 8 MiB of float32 (non-temporal stores) and float64 against
  // the composite batch_normalization of moments, differentiated by the tape.
  const int threads = tpf::config::intra_op_threads();
  tpf::config::set_intra_op_threads(2);
  const auto x = uniform64({2, 8, 16, 16}) * 2.0 + 0.5;
  const auto scale = uniform64({8}, 0.5, 1.5), offset = uniform64({8});
  const auto why = testing::gradcheck(
      [](const Ts& in) {
        return nn::fused_batch_norm(in[0], in[1], in[2], 1e-3).y;
      },
      {x, scale, offset});
  CHECK_MESSAGE(why.empty(), why);
  const auto big = uniform64({4, 16, 128, 257}) * 2.0 + 0.5;
  const auto s16 = uniform64({16}, 0.5, 1.5), o16 = uniform64({16});
  const auto dy = uniform64(big.shape());
  auto run = [&](tpf::DType dt, bool fused) {
    Ts in{big.cast(dt), s16.cast(dt), o16.cast(dt)};
    tpf::GradientTape tape;
    for (auto& t : in) tape.watch(t);
    tpf::Tensor y;
    if (fused) {
      y = nn::fused_batch_norm(in[0], in[1], in[2], 1e-3).y;
    } else {
      const auto [m, v] = nn::moments(in[0], {0, 2, 3}, true);
      y = nn::batch_normalization(in[0], m, v,
                                  tpf::reshape(in[2], {1, 16, 1, 1}),
                                  tpf::reshape(in[1], {1, 16, 1, 1}), 1e-3);
    }
    Ts out = tape.gradient(y, in, {dy.cast(dt)});
    for (auto& t : out) t = t.cast(tpf::float64);
    return out;
  };
  const auto composite = run(tpf::float64, false);
  const auto r64 = run(tpf::float64, true), r32 = run(tpf::float32, true);
  for (int i = 0; i < 3; ++i) {
    CAPTURE(i);
    CHECK_CLOSE(r64[i], composite[i], 1e-8, 1e-9);
    CHECK_CLOSE(r32[i], r64[i], 1e-3, 1e-4);
  }
  tpf::config::set_intra_op_threads(threads);
}

TEST_CASE("moments, batch_normalization and layer_normalization") {
  const auto x = uniform64({4, 3, 5});
  const auto [m, v] = nn::moments(x, {0, 2}, false);
  const auto [hm, hv] = channel_stats(x);
  CHECK_CLOSE(m, tpf::from_vector(hm, {3}));
  CHECK_CLOSE(v, tpf::from_vector(hv, {3}));
  const auto [mk, vk] = nn::moments(x, {0, 2}, true);
  CHECK(mk.shape() == tpf::Shape{1, 3, 1});
  CHECK(vk.shape() == tpf::Shape{1, 3, 1});
  const auto gamma = uniform64({5}), beta = uniform64({5});
  const auto y = nn::layer_normalization(x, -1, tpf::Tensor(), tpf::Tensor());
  CHECK_CLOSE(tpf::mean(y, {2}), tpf::zeros({4, 3}, tpf::float64), 1e-6, 1e-9);
  // Each row's mean square is var / (var + epsilon): below 1 by up to 4e-4
  // for a row of 5 draws that happen to lie close together.
  const auto row_var = nn::moments(x, {2}).second;
  CHECK_CLOSE(tpf::mean(tpf::square(y), {2}), row_var / (row_var + 1e-5), 1e-9,
              1e-12);
  const std::vector<testing::OpCase> cases = {
      {"batch_normalization",
       [](const Ts& in) {
         const auto [mm, vv] = nn::moments(in[0], {0, 2}, true);
         return nn::batch_normalization(in[0], mm, vv, in[2], in[1], 1e-3);
       },
       {x, uniform64({1, 3, 1}), uniform64({1, 3, 1})},
       {}},  // forward values: the hand checks above
      {"layer_normalization",
       [](const Ts& in) {
         return nn::layer_normalization(in[0], 1, in[1], in[2], 1e-5);
       },
       {x, uniform64({3, 5}), uniform64({3, 5})},
       {}},
  };
  for (const auto& c : cases) testing::run_op_case(c);
}

TEST_CASE("dropout") {
  const auto x = uniform64({1000, 100}) + 2.0;  // all positive, mean 2
  CHECK(nn::dropout(x, 0.0).is_same(x));
  CHECK(nn::dropout(x, 0.7, false).is_same(x));
  for (auto dt : {tpf::float64, tpf::float32}) {
    const auto xs = x.cast(dt);
    const auto y = nn::dropout(xs, 0.25, true, {}, 42u);
    CHECK(y.dtype() == dt);
    // Kept elements are scaled by 1 / 0.75; the rest are 0.
    const auto ratio = tpf::where(y == tpf::scalar_like(y, 0.0),
                                  tpf::scalar_like(y, 1.0 / 0.75), y / xs);
    CHECK_CLOSE(ratio.cast(tpf::float64),
                tpf::full({1000, 100}, 1.0 / 0.75, tpf::float64), 1e-6, 1e-6);
    const double kept =
        tpf::mean(tpf::cast(y != tpf::scalar_like(y, 0.0), tpf::float64))
            .item<double>();
    CHECK(std::abs(kept - 0.75) < 0.01);  // 1e5 draws: sigma ~ 0.0014
    CHECK(std::abs(tpf::mean(y).item<double>() - tpf::mean(xs).item<double>()) <
          0.02);
    // Same seed, same mask; the global stream gives a different one.
    CHECK_CLOSE(nn::dropout(xs, 0.25, true, {}, 42u), y, 0, 0);
    CHECK(tpf::sum(nn::dropout(xs, 0.25) != y).item<int64_t>() > 0);
  }
  // noise_shape {N, 1}: whole rows dropped together.
  const auto rows = nn::dropout(x, 0.5, true, {1000, 1}, 7u);
  const auto zero_rows =
      tpf::equal(tpf::max(tpf::abs(rows), {1}), tpf::scalar_like(rows, 0.0));
  const auto any_zero =
      tpf::equal(tpf::min(tpf::abs(rows), {1}), tpf::scalar_like(rows, 0.0));
  CHECK(tpf::sum(zero_rows != any_zero).item<int64_t>() == 0);
  // Gradient = mask / keep.
  tpf::GradientTape tape;
  tape.watch(x);
  const auto y = nn::dropout(x, 0.4, true, {}, 3u);
  const auto g = tape.gradient(y, {x})[0];
  CHECK_CLOSE(g, y / x, 1e-12, 1e-12);
}

TEST_CASE("normalization and dropout errors") {
  const auto x = tpf::ones({2, 3, 4});
  expect_error<tpf::ValueError>([&] { nn::dropout(x, 1.0); },
                                "[dropout] expected");
  expect_error<tpf::ValueError>([&] { nn::dropout(x, -0.1); },
                                "[dropout] expected");
  expect_error<tpf::ShapeError>(
      [&] {
        nn::dropout(x, 0.5, true, {5, 1});
      },
      "[dropout] expected");
  expect_error<tpf::ShapeError>(
      [&] {
        nn::dropout(x, 0.5, true, {1, 2, 3, 4});
      },
      "[dropout] expected");
  expect_error<tpf::DTypeError>(
      [&] { nn::dropout(tpf::ones({2}, tpf::int32), 0.5); },
      "[dropout] expected");
  const char* p = "[fused_batch_norm] expected";
  expect_error<tpf::ValueError>(
      [&] { nn::fused_batch_norm(x, {}, {}, 1e-3, false); }, p);
  expect_error<tpf::ShapeError>(
      [&] { nn::fused_batch_norm(x, tpf::ones({4}), {}, 1e-3); }, p);
  expect_error<tpf::ShapeError>(
      [&] { nn::fused_batch_norm(tpf::ones({3}), {}, {}, 1e-3); }, p);
  expect_error<tpf::DTypeError>(
      [&] {
        nn::fused_batch_norm(tpf::ones({2, 3}, tpf::int64), {}, {});
      },
      p);
}

TEST_CASE("a second-order gradient through fused_batch_norm is refused") {
  const auto x = testing::uniform64({4, 3, 2});
  tpf::GradientTape outer;
  outer.watch(x);
  tpf::Tensor dx;
  {
    tpf::GradientTape inner;
    inner.watch(x);
    const auto y = nn::fused_batch_norm(x, {}, {}, 1e-3).y;
    dx = inner.gradient(tpf::sum(y * y), {x})[0];
  }
  CHECK_THROWS_AS(outer.gradient(tpf::sum(dx), {x}), tpf::ValueError);
}

namespace {
/** channel_stats as a (2, C) tensor: mean; var. */
tpf::Tensor packed_stats(const tpf::Tensor& x) {
  auto [m, v] = channel_stats(x);
  const int64_t c = static_cast<int64_t>(m.size());
  m.insert(m.end(), v.begin(), v.end());
  return tpf::from_vector(m, {2, c});
}
/** batch_moments' mean and variance as the rows of one (2, C) tensor. */
tpf::Tensor moments_rows(const tpf::Tensor& x) {
  const auto [m, v] = nn::batch_moments(x);
  return tpf::concat({tpf::expand_dims(m, 0), tpf::expand_dims(v, 0)}, 0);
}
}  // namespace

// Last in the file: its random draws leave the earlier cases' inputs as they
// were.
TEST_CASE("batch_moments: one-pass statistics, gradcheck, accuracy") {
  const auto x = uniform64({4, 3, 5, 2}) * 2.0 + 0.5;
  const auto x2 = uniform64({6, 4}) - 3.0;
  const std::vector<testing::OpCase> cases = {
      {"batch_moments",
       [](const Ts& in) { return moments_rows(in[0]); },
       {x},
       packed_stats(x)},
      {"batch_moments rank 2",
       [](const Ts& in) { return moments_rows(in[0]); },
       {x2},
       packed_stats(x2)},
      // Both outputs feed further ops (the variance's gradient through
      // x - mean), and each alone (the other's gradient undefined).
      {"batch_moments composed",
       [](const Ts& in) {
         const auto [m, v] = nn::batch_moments(in[0]);
         return m * v;
       },
       {x},
       tpf::Tensor()},
      {"batch_moments mean only",
       [](const Ts& in) { return nn::batch_moments(in[0]).first * 3.0; },
       {x},
       tpf::Tensor()},
      {"batch_moments variance only",
       [](const Ts& in) { return nn::batch_moments(in[0]).second; },
       {x},
       tpf::Tensor()},
  };
  for (const auto& c : cases) testing::run_op_case(c);
  // Long rows (the xsimd path), few channels (split over N), a large mean
  // against the spread: float32 stays close to the float64 host loops.
  const auto big = uniform64({64, 2, 33, 17}) * 0.01 + 100.0;
  const auto expect = packed_stats(big);
  CHECK_CLOSE(moments_rows(big), expect, 1e-12, 1e-14);
  const auto p32 = moments_rows(big.cast(tpf::float32));
  CHECK(p32.dtype() == tpf::float32);
  CHECK_CLOSE(p32.cast(tpf::float64), expect, 1e-5, 0);
  // Empty batch: NaN statistics, as the mean of nothing.
  const auto e = moments_rows(tpf::zeros({0, 3, 2}, tpf::float64));
  CHECK(e.shape() == tpf::Shape{2, 3});
  CHECK(std::isnan(e.to_vector<double>()[0]));
  expect_error<tpf::ShapeError>([] { nn::batch_moments(tpf::ones({3})); },
                                "[batch_moments] expected");
  expect_error<tpf::DTypeError>(
      [] {
        nn::batch_moments(tpf::ones({2, 3}, tpf::int32));
      },
      "[batch_moments] expected");
}

TEST_CASE("degenerate inputs: OpCase rows") {
  using testing::degenerate;
  using testing::kNan;
  using testing::OpCase;
  using testing::zeros64;
  const std::vector<OpCase> cases = {
      degenerate(
          "moments_of_nothing_are_nan",
          [](const Ts& in) { return nn::moments(in[0], {0}).first; },
          {zeros64({0, 2})}, tpf::tensor({kNan, kNan})),
      degenerate(
          "moments_per_row_of_no_rows",
          [](const Ts& in) { return nn::moments(in[0], {1}).second; },
          {zeros64({0, 3})}, zeros64({0})),
      degenerate(
          "layer_normalization_no_rows",
          [](const Ts& in) {
            return nn::layer_normalization(in[0], 1, in[1], in[2]);
          },
          {zeros64({0, 3}), uniform64({3}), uniform64({3})}, zeros64({0, 3})),
      degenerate(
          "layer_normalization_nan_row",
          [](const Ts& in) {
            return nn::layer_normalization(in[0], 1, in[1], in[2]);
          },
          {tpf::tensor({{kNan, 1.0}, {1.0, 1.0}}), tpf::tensor({1.0, 1.0}),
           tpf::tensor({0.5, 0.5})},
          tpf::tensor({{kNan, kNan}, {0.5, 0.5}})),
  };
  for (const auto& c : cases) testing::run_op_case(c);
}
