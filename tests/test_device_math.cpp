// White-box: the math the CPU and CUDA kernels share through TPF_HOST_DEVICE
// headers, compiled here by g++, against the CPU kernels' outputs. Each
// reference below evaluates one output element at a time, as a GPU thread
// does: Philox words, pool windows and indices, Welford/Chan moments, and
// the fused optimizer updates.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/arg_reduce_rule.hpp"
#include "core/batch_norm_math.hpp"
#include "core/fractional_regions.hpp"
#include "core/optim_update.hpp"
#include "core/philox.hpp"
#include "core/pool_gather.hpp"
#include "core/pool_window.hpp"
#include "core/welford.hpp"
#include "cpu/nn_direct.hpp"
#include "ops/apply.hpp"
#include "ops/nn/fractional_pool_ops.hpp"
#include "ops/nn/pool_ops.hpp"
#include "optim/apply_ops.hpp"
#include "support/check.hpp"
#include "support/device_math.hpp"

namespace tpf = tapeflow;
using testing::merge_tree;
using testing::pool_cases;
using testing::PoolCase;
using testing::tied_values;
using testing::ulps;

TEST_CASE(
    "Philox words through the shared header equal the CPU random kernels") {
  // Across a carry into the counter's high word, so that both the CPU's
  // vectorised lanes and its one-counter path run.
  const uint64_t seed = 0x9e3779b97f4a7c15ULL, start = (1ULL << 32) - 2051;
  const tpf::RngState saved = tpf::get_rng_state();
  for (tpf::DType dt : {tpf::float32, tpf::float64})
    for (bool normal : {false, true}) {
      CAPTURE(dt);
      CAPTURE(normal);
      tpf::set_rng_state({seed, start});
      const auto t = normal ? tpf::random_normal({5000}, 1.5, 2.0, dt)
                            : tpf::random_uniform({5000}, -1.0, 3.0, dt);
      const auto got = t.to_vector<double>();
      int64_t differ = 0;
      for (uint64_t i = 0; i < got.size(); ++i) {
        const tpf::PhiloxWords w = tpf::philox4x32(start + i, seed);
        const double expect =
            dt == tpf::float32
                ? double(normal ? tpf::normal_sample<float>(w, 1.5, 2.0)
                                : tpf::uniform_sample<float>(w, -1.0, 4.0))
                : (normal ? tpf::normal_sample<double>(w, 1.5, 2.0)
                          : tpf::uniform_sample<double>(w, -1.0, 4.0));
        differ += got[i] != expect;
      }
      CHECK(differ == 0);
    }
  tpf::set_rng_state(saved);
}

namespace {

bool same_value(double a, double b) {
  return a == b || (std::isnan(a) && std::isnan(b));
}

}  // namespace

TEST_CASE(
    "pool windows, maxima and indices of the shared header equal the CPU "
    "kernels") {
  uint64_t seed = 1;
  for (const PoolCase& c : pool_cases())
    for (tpf::DType dt : {tpf::float64, tpf::float32})
      for (bool with_nan : {false, true}) {
        const tpf::PoolWindow w{c.k, c.s, c.lo, c.hi};
        const tpf::PoolGeometry g = w.geometry(c.x);
        const tpf::Tensor x64 = tied_values(c.x, with_nan, seed++);
        const tpf::Tensor x = x64.cast(dt);
        const auto [y, ws] = tpf::apply(tpf::MaxPool{w, true}, {x});
        const auto xv = x64.to_vector<double>(), yv = y.to_vector<double>();
        const auto wsv = ws.to_vector<int32_t>();
        CAPTURE(c.x);
        CAPTURE(dt);
        CAPTURE(with_nan);
        REQUIRE(int64_t(yv.size()) == g.planes * g.out_size());
        // The avg kernels of float32 may sum in another order.
        const double avg_tol = dt == tpf::float32 ? 1e-6 : 0.0;
        std::vector<tpf::Tensor> avgs;
        for (bool incl : {false, true})
          avgs.push_back(tpf::apply(tpf::AvgPool{w, incl}, {x}));
        int64_t wrong_max = 0, wrong_ws = 0, wrong_avg = 0, wrong_argmax = 0;
        std::vector<int64_t> argmax;
        if (c.k.size() == 2)
          argmax = tpf::apply(tpf::MaxPoolArgmax{w, c.x, true}, {ws})
                       .to_vector<int64_t>();
        const auto avg0 = avgs[0].to_vector<double>(),
                   avg1 = avgs[1].to_vector<double>();
        for (int64_t p = 0; p < g.planes; ++p)
          for (int64_t o = 0; o < g.out_size(); ++o) {
            int64_t pos[3];
            tpf::pool_output_position(g, o, pos);
            const tpf::PoolSpan span = tpf::pool_span(g, pos);
            const double* plane = xv.data() + p * g.in_size();
            const int64_t at = tpf::pool_argmax(g, plane, span);
            const int64_t i = p * g.out_size() + o;
            wrong_max += !same_value(yv[i], plane[at]);
            wrong_ws += wsv[i] != tpf::pool_window_index(g, span, at);
            if (!argmax.empty())
              wrong_argmax +=
                  argmax[i] !=
                  tpf::pool_tf_argmax(g, p,
                                      tpf::pool_window_element(g, span, wsv[i]),
                                      c.x[1], true);
            if (with_nan) continue;
            double sum = 0;
            tpf::pool_sum(g, plane, span, sum);
            wrong_avg += std::abs(avg0[i] - sum / span.count(false)) > avg_tol;
            wrong_avg += std::abs(avg1[i] - sum / span.count(true)) > avg_tol;
          }
        CHECK(wrong_max == 0);
        CHECK(wrong_ws == 0);
        CHECK(wrong_avg == 0);
        CHECK(wrong_argmax == 0);
      }
}

TEST_CASE("pool window arithmetic by hand") {
  // A 3x3 plane, 2x2 windows of stride 1 with one row and column of padding
  // before: window (0, 0) starts at (-1, -1) and holds one input element.
  const tpf::PoolWindow w{{2, 2}, {1, 1}, {1, 1}, {0, 0}};
  const tpf::PoolGeometry g = w.geometry({1, 1, 3, 3});
  CHECK(g.out[1] == 3);
  CHECK(g.out[2] == 3);
  tpf::PoolSpan s = tpf::pool_span(g, {0, 0, 0});
  CHECK(s.start[1] == -1);
  CHECK(s.b[1] == 0);
  CHECK(s.e[1] == 1);
  CHECK(s.count(true) == 4);
  CHECK(s.count(false) == 1);
  CHECK(tpf::pool_window_index(g, s, 0) == 3);  // (1, 1) of the window
  CHECK(tpf::pool_window_element(g, s, 3) == 0);
  // Window (1, 2): rows 0-1, columns 1-2 (plane offsets 1, 2, 4, 5).
  s = tpf::pool_span(g, {0, 1, 2});
  CHECK(s.count(false) == 4);
  const double ties[9] = {0, 7, 7, 0, 7, 7, 0, 0, 0};
  CHECK(tpf::pool_argmax(g, ties, s) == 1);  // the first of equal maxima
  const double nans[9] = {0, 1, NAN, 0, 9, NAN, 0, 0, 0};
  CHECK(tpf::pool_argmax(g, nans, s) == 2);  // the first NaN, before a 9
  CHECK(tpf::pool_window_index(g, s, 5) == 3);
  double sum = 0;
  tpf::pool_sum(g, ties, s, sum);
  CHECK(sum == 28);
  int64_t pos[3];
  tpf::pool_output_position(g, 5, pos);
  CHECK((pos[0] == 0 && pos[1] == 1 && pos[2] == 2));
  // TensorFlow's index: NHWC position of plane offset 5 (h 1, w 2) in plane
  // 3 of C = 2 (n 1, c 1): (1 * 3 + 2) * 2 + 1, plus n * 9 * 2 with batch.
  CHECK(tpf::pool_tf_argmax(g, 3, 5, 2, false) == 11);
  CHECK(tpf::pool_tf_argmax(g, 3, 5, 2, true) == 29);
}

namespace {

/** Mean and biased variance by two passes in float64. */
std::pair<double, double> two_pass(const double* x, int64_t n) {
  double sum = 0, sq = 0;
  for (int64_t i = 0; i < n; ++i) sum += x[i];
  const double mean = sum / double(n);
  for (int64_t i = 0; i < n; ++i) sq += (x[i] - mean) * (x[i] - mean);
  return {mean, sq / double(n)};
}

/** Partials of uneven sizes (some empty), each added value by value. */
template <class T>
std::vector<tpf::WelfordMoments<T>> partials(const std::vector<double>& x,
                                             std::mt19937_64& gen) {
  std::vector<tpf::WelfordMoments<T>> parts;
  for (size_t i = 0; i < x.size();) {
    const size_t len = std::min<size_t>(x.size() - i, gen() % 700);
    tpf::WelfordMoments<T> m;
    for (size_t j = i; j < i + len; ++j) m.add(T(x[j]));
    parts.push_back(m);
    i += len;
  }
  return parts;
}

bool same_bits(const tpf::WelfordMoments<double>& a,
               const tpf::WelfordMoments<double>& b) {
  return std::memcmp(&a, &b, sizeof a) == 0;
}

}  // namespace

TEST_CASE("Welford moments merged by Chan's formula equal two passes") {
  std::mt19937_64 gen(7);
  std::normal_distribution<double> normal(1e3, 2.0);  // mean >> spread
  std::vector<double> x(20011);
  for (double& e : x) e = normal(gen);
  const auto [mean, var] = two_pass(x.data(), int64_t(x.size()));
  const auto parts = partials<double>(x, gen);
  REQUIRE(parts.size() > 20);
  tpf::WelfordMoments<double> in_order;
  for (const auto& p : parts) in_order.merge(p);
  for (const auto& m : {in_order, merge_tree(parts)}) {
    CHECK(m.count == double(x.size()));
    CHECK(std::abs(m.mean - mean) <= 1e-12 * std::abs(mean));
    CHECK(std::abs(m.variance() - var) <= 1e-12 * var);
  }
  // The same partials in the same tree give the same bits: no step depends
  // on timing. An empty partial merges as the identity.
  CHECK(same_bits(merge_tree(parts), merge_tree(parts)));
  tpf::WelfordMoments<double> copy = in_order;
  copy.merge({});
  CHECK(same_bits(copy, in_order));
  // float accumulators, for float32 inputs, to float's precision.
  const auto m32 = merge_tree(partials<float>(x, gen));
  CHECK(std::abs(m32.mean - mean) <= 1e-6 * mean);
  CHECK(std::abs(m32.variance() - var) <= 1e-3 * var);
}

TEST_CASE("Welford moments per channel equal the CPU's batch moments") {
  // (N, C, S) with channel means far from zero, a layout BatchMoments takes.
  const int64_t n = 5, c = 3, s = 37;
  std::vector<double> v(n * c * s);
  std::mt19937_64 gen(11);
  std::uniform_real_distribution<double> u(-1, 1);
  for (int64_t i = 0; i < n * c * s; ++i) v[i] = 100.0 * (i / s % c) + u(gen);
  const auto x = tpf::from_vector(v, {n, c, s});
  tpf::Tensor mean = tpf::zeros({c}, tpf::float64),
              var = tpf::zeros({c}, tpf::float64);
  tpf::cpu::channel_moments(x, mean, var);
  const auto mv = mean.to_vector<double>(), vv = var.to_vector<double>();
  for (int64_t ch = 0; ch < c; ++ch) {
    tpf::WelfordMoments<double> m;
    for (int64_t b = 0; b < n; ++b) {
      tpf::WelfordMoments<double> row;  // one (n, c) row per partial
      for (int64_t i = 0; i < s; ++i) row.add(v[(b * c + ch) * s + i]);
      m.merge(row);
    }
    CHECK(std::abs(m.mean - mv[ch]) <= 1e-12 * std::max(1.0, mv[ch]));
    CHECK(std::abs(m.variance() - vv[ch]) <= 1e-12 * vv[ch]);
  }
}

namespace {

template <class T>
std::vector<T> random_values(size_t n, double lo, double hi, uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<double> u(lo, hi);
  std::vector<T> v(n);
  for (T& e : v) e = T(u(gen));
  return v;
}

/** Largest ulp distance between the kernel's result and the expected one. */
template <class T>
int64_t max_ulps(const tpf::Tensor& got, const std::vector<T>& expect) {
  const auto g = got.to_vector<T>();
  int64_t worst = 0;
  for (size_t i = 0; i < g.size(); ++i)
    worst = std::max(worst, ulps(g[i], expect[i]));
  return worst;
}

/**
 * The fused kernels against the header's formulas one element at a time,
 * over vector batches and scalar tails: the same bits, as every multiply-add
 * is an explicit fma (under any -march or sanitizer). With two threads the
 * second range starts off a vector boundary (element 35001), where an aligned
 * store once faulted.
 */
template <class T>
void check_updates() {
  const size_t n = 70001;
  const tpf::DType dt = sizeof(T) == 4 ? tpf::float32 : tpf::float64;
  const auto w0 = random_values<T>(n, -1, 1, 1),
             g0 = random_values<T>(n, -1, 1, 2),
             m0 = random_values<T>(n, -0.1, 0.1, 3),
             v0 = random_values<T>(n, 0, 0.01, 4);
  auto w = tpf::from_vector(w0, {int64_t(n)}),
       g = tpf::from_vector(g0, {int64_t(n)}),
       m = tpf::from_vector(m0, {int64_t(n)}),
       v = tpf::from_vector(v0, {int64_t(n)});
  REQUIRE(w.dtype() == dt);
  const tpf::ApplyAdam adam{1e-3 * std::sqrt(1 - 0.999) / (1 - 0.9), 0.9, 0.999,
                            1e-7};
  REQUIRE(tpf::apply_in_place(adam, std::vector<tpf::Tensor>{w, g, m, v}));
  auto we = w0, me = m0, ve = v0;
  const tpf::AdamConstants<T> k(adam.alpha, adam.beta_1, adam.beta_2,
                                adam.epsilon);
  for (size_t i = 0; i < n; ++i)
    tpf::adam_update(we[i], g0[i], me[i], ve[i], k.alpha, k.c1, k.c2, k.eps);
  CHECK(max_ulps(m, me) == 0);
  CHECK(max_ulps(v, ve) == 0);
  CHECK(max_ulps(w, we) == 0);

  const tpf::ApplyGradientDescent sgd{0.05};
  auto w2 = tpf::from_vector(w0, {int64_t(n)});
  REQUIRE(tpf::apply_in_place(sgd, std::vector<tpf::Tensor>{w2, g}));
  const auto gv = g.template to_vector<T>();  // g is only read
  CHECK(gv == g0);
  for (size_t i = 0; i < n; ++i)
    we[i] = tpf::gradient_descent_update(w0[i], g0[i], T(sgd.lr));
  CHECK(max_ulps(w2, we) == 0);
}

}  // namespace

TEST_CASE("fused Adam and SGD updates equal the shared formulas bit for bit") {
  for (int threads : {1, 2}) {
    const int saved = tpf::config::intra_op_threads();
    tpf::config::set_intra_op_threads(threads);
    CAPTURE(threads);
    check_updates<float>();
    check_updates<double>();
    tpf::config::set_intra_op_threads(saved);
  }
}
