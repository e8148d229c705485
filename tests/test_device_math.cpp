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

namespace tpf = tapeflow;

namespace {

/** Distance in units in the last place between finite a and b. */
template <class T>
int64_t ulps(T a, T b) {
  using I = std::conditional_t<sizeof(T) == 4, int32_t, int64_t>;
  I ia, ib;
  std::memcpy(&ia, &a, sizeof(T));
  std::memcpy(&ib, &b, sizeof(T));
  // Map the sign-magnitude bits onto a line where neighbours differ by 1.
  const auto line = [](I i) {
    return i < 0 ? std::numeric_limits<I>::min() - i : i;
  };
  const int64_t d = int64_t(line(ia)) - int64_t(line(ib));
  return d < 0 ? -d : d;
}

}  // namespace

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

/** One pooling of the table: input shape, window, strides, paddings. */
struct PoolCase {
  tpf::Shape x, k, s, lo, hi;
};

/** TensorFlow's SAME padding (low half rounded down) or VALID's none. */
PoolCase tf_padded(const tpf::Shape& x, const std::vector<int64_t>& k,
                   const std::vector<int64_t>& s, bool same) {
  PoolCase c{x, tpf::Shape(k), tpf::Shape(s), {}, {}};
  for (size_t i = 0; i < k.size(); ++i) {
    const int64_t in = x[2 + i], out = (in + s[i] - 1) / s[i];
    const int64_t total =
        same ? std::max<int64_t>((out - 1) * s[i] + k[i] - in, 0) : 0;
    c.lo.push_back(total / 2);
    c.hi.push_back(total - total / 2);
  }
  return c;
}

/** test_pool.cpp's geometries (rank 1-3, VALID and SAME, three strides)
 * and explicit asymmetric paddings. */
std::vector<PoolCase> pool_cases() {
  const tpf::Shape shapes[] = {{2, 3, 7}, {2, 3, 5, 7}, {1, 2, 5, 3, 4}};
  const std::vector<int64_t> ks[] = {{3}, {3, 2}, {2, 3, 2}};
  std::vector<PoolCase> cases;
  for (int nd = 1; nd <= 3; ++nd)
    for (const auto& s :
         {ks[nd - 1], std::vector<int64_t>(nd, 1), std::vector<int64_t>(nd, 2)})
      for (bool same : {false, true})
        cases.push_back(tf_padded(shapes[nd - 1], ks[nd - 1], s, same));
  cases.push_back({{2, 3, 6}, {4}, {3}, {3}, {1}});
  cases.push_back({{2, 2, 4, 5}, {3, 2}, {2, 1}, {2, 0}, {1, 1}});
  cases.push_back(
      {{1, 2, 5, 3, 4}, {2, 2, 2}, {1, 2, 2}, {1, 1, 0}, {0, 1, 1}});
  return cases;
}

/** Values from {0, ..., 4}, so windows tie often; a few NaN if asked. */
tpf::Tensor tied_values(const tpf::Shape& shape, bool with_nan, uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::vector<double> v(static_cast<size_t>(shape.numel()));
  for (double& e : v) e = double(gen() % 5);
  if (with_nan)
    for (size_t i = 3; i < v.size(); i += 7 + gen() % 5) v[i] = testing::kNan;
  return tpf::from_vector(v, shape);
}

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

/** Merges as a block reduction does: i takes i + stride, strides halving. */
template <class T>
tpf::WelfordMoments<T> merge_tree(std::vector<tpf::WelfordMoments<T>> parts) {
  size_t width = 1;
  while (width < parts.size()) width *= 2;
  parts.resize(width);
  for (size_t stride = width / 2; stride > 0; stride /= 2)
    for (size_t i = 0; i < stride; ++i) parts[i].merge(parts[i + stride]);
  return parts[0];
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
 * over vector batches and scalar tails. With two threads the second range
 * starts off a vector boundary (element 35001), where an aligned store once
 * faulted.
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
  CHECK(max_ulps(m, me) <= 1);
  CHECK(max_ulps(v, ve) <= 1);
  CHECK(max_ulps(w, we) <= 1);

  const tpf::ApplyGradientDescent sgd{0.05};
  auto w2 = tpf::from_vector(w0, {int64_t(n)});
  REQUIRE(tpf::apply_in_place(sgd, std::vector<tpf::Tensor>{w2, g}));
  const auto gv = g.template to_vector<T>();  // g is only read
  CHECK(gv == g0);
  for (size_t i = 0; i < n; ++i)
    we[i] = tpf::gradient_descent_update(w0[i], g0[i], T(sgd.lr));
  CHECK(max_ulps(w2, we) <= 1);
}

}  // namespace

TEST_CASE("fused Adam and SGD updates equal the shared formulas to 1 ulp") {
  for (int threads : {1, 2}) {
    const int saved = tpf::config::intra_op_threads();
    tpf::config::set_intra_op_threads(threads);
    CAPTURE(threads);
    check_updates<float>();
    check_updates<double>();
    tpf::config::set_intra_op_threads(saved);
  }
}

namespace {

/** Runs a CPU kernel into fresh outputs of `specs`' shapes and dtypes. */
template <class Op, class Kernel>
std::vector<tpf::Tensor> run_cpu(Kernel kernel, const Op& op,
                                 const std::vector<tpf::Tensor>& in,
                                 const std::vector<tpf::Tensor>& like) {
  std::vector<tpf::Tensor> out;
  for (const tpf::Tensor& t : like)
    out.push_back(tpf::zeros(t.shape(), t.dtype()));
  kernel(op, tpf::Inputs(in), tpf::Outputs(out, nullptr));
  return out;
}

}  // namespace

TEST_CASE("pool gradients gathered per input element equal the CPU scatter") {
  std::vector<PoolCase> cases = pool_cases();
  cases.push_back({{2, 3, 10}, {2}, {3}, {0}, {0}});  // the stride skips
  cases.push_back({{1, 2, 7, 6}, {1, 2}, {3, 2}, {0, 1}, {0, 1}});
  uint64_t seed = 100;
  for (const PoolCase& c : cases)
    for (tpf::DType dt : {tpf::float64, tpf::float32}) {
      CAPTURE(c.x);
      CAPTURE(dt);
      const tpf::PoolWindow w{c.k, c.s, c.lo, c.hi};
      const tpf::PoolGeometry g = w.geometry(c.x);
      const tpf::Tensor x = tied_values(c.x, false, seed++).cast(dt);
      const tpf::Shape ys = w.output_shape(c.x);
      const auto fwd =
          run_cpu(tpf::cpu::max_pool_direct, tpf::MaxPool{w, true}, {x},
                  {tpf::zeros(ys, dt), tpf::zeros(ys, tpf::int32)});
      const tpf::Tensor dy =
          tpf::random_uniform(fwd[0].shape(), -1.0, 1.0, tpf::float64).cast(dt);
      const auto dyv = dy.to_vector<double>();
      const auto wsv = fwd[1].to_vector<int32_t>();
      const auto max_dx =
          run_cpu(tpf::cpu::max_pool_scatter_direct,
                  tpf::MaxPoolScatter{w, c.x}, {dy, fwd[1]}, {x})[0]
              .to_vector<double>();
      std::vector<double> avg_dx[2];
      for (bool incl : {false, true})
        avg_dx[incl] = run_cpu(tpf::cpu::avg_pool_grad_direct,
                               tpf::AvgPoolGrad{w, incl, c.x}, {dy}, {x})[0]
                           .to_vector<double>();
      // Evaluated in double from values exact in T: the order of the sums is
      // what is checked, so float32 may differ by its rounding only.
      const double tol = dt == tpf::float32 ? 1e-6 : 0.0;
      int64_t wrong_max = 0, wrong_avg = 0;
      for (int64_t p = 0; p < g.planes; ++p)
        for (int64_t j = 0; j < g.in_size(); ++j) {
          const int64_t i = p * g.in_size() + j;
          wrong_max += std::abs(tpf::max_pool_gathered_grad(g, p, j, dyv.data(),
                                                            wsv.data()) -
                                max_dx[i]) > tol;
          for (bool incl : {false, true})
            wrong_avg += std::abs(tpf::avg_pool_gathered_grad(
                                      g, p, j, dyv.data(), incl) -
                                  avg_dx[incl][i]) > tol;
        }
      CHECK(wrong_max == 0);
      CHECK(wrong_avg == 0);
    }
}

TEST_CASE("pool cover by hand") {
  // Windows of 2 at stride 3 over 10 columns: [0, 2), [3, 5), [6, 8).
  const tpf::PoolWindow w{{2}, {3}, {0}, {0}};
  const tpf::PoolGeometry g = w.geometry({1, 1, 10});
  REQUIRE(g.out[2] == 3);
  const int64_t pos4[3] = {0, 0, 4}, pos5[3] = {0, 0, 5}, pos9[3] = {0, 0, 9};
  tpf::PoolCover c = tpf::pool_cover(g, pos4);
  CHECK((c.first[2] == 1 && c.last[2] == 1));
  c = tpf::pool_cover(g, pos5);  // between windows
  CHECK(c.first[2] > c.last[2]);
  c = tpf::pool_cover(g, pos9);  // past the last window
  CHECK(c.first[2] > c.last[2]);
}

namespace {

/**
 * argmax/argmin of row `v` as the CUDA kernel computes it: 32 lanes scan
 * strided shares, then merge in its shuffle-down tree.
 */
template <bool kMax>
int64_t warp_arg(const std::vector<double>& v) {
  constexpr int kLanes = 32;
  std::vector<tpf::ArgCandidate<double>> lane(kLanes, {0.0, -1});
  for (int l = 0; l < kLanes; ++l)
    for (size_t j = l; j < v.size(); j += kLanes)
      lane[l] = tpf::arg_better<kMax>(
          lane[l], tpf::ArgCandidate<double>{v[j], int64_t(j)});
  for (int delta = kLanes / 2; delta > 0; delta /= 2)
    for (int l = 0; l + delta < kLanes; ++l)
      lane[l] = tpf::arg_better<kMax>(lane[l], lane[l + delta]);
  return lane[0].index;
}

}  // namespace

TEST_CASE("argmax and argmin merged in a warp tree equal the CPU's scan") {
  std::mt19937_64 gen(5);
  for (int64_t n : {1, 7, 31, 32, 33, 100, 1000})
    for (bool with_nan : {false, true}) {
      const int64_t rows = 20;
      std::vector<double> v(rows * n);
      for (double& e : v) e = double(gen() % 4) - 2.0;  // many ties
      if (with_nan)
        for (int64_t r = 0; r < rows; r += 2)
          for (int k = 0; k < 2; ++k) v[r * n + gen() % n] = testing::kNan;
      const auto x = tpf::from_vector(v, {rows, n});
      const auto amax = tpf::argmax(x, 1).to_vector<int64_t>();
      const auto amin = tpf::argmin(x, 1).to_vector<int64_t>();
      CAPTURE(n);
      CAPTURE(with_nan);
      for (int64_t r = 0; r < rows; ++r) {
        const std::vector<double> row(v.begin() + r * n,
                                      v.begin() + (r + 1) * n);
        CHECK(warp_arg<true>(row) == amax[r]);
        CHECK(warp_arg<false>(row) == amin[r]);
      }
    }
}

TEST_CASE(
    "the channel split tiles each channel and its moments are the CPU's") {
  struct Dims {
    int64_t n, c, s;
  };
  for (const Dims d : {Dims{5, 3, 37}, Dims{64, 2, 1}, Dims{1, 3, 100000},
                       Dims{300, 4, 50}, Dims{0, 3, 4}, Dims{2, 1, 0}}) {
    CAPTURE(d.n);
    CAPTURE(d.c);
    CAPTURE(d.s);
    const tpf::ChannelSplit p = tpf::plan_channel_split(d.n, d.c, d.s, 256, 64);
    CHECK(p.splits >= 1);
    int64_t covered = 0;
    for (int64_t part = 0; part < p.splits; ++part) {
      CHECK(p.begin(part) == covered);
      CHECK((p.end(part) > p.begin(part) || p.per_channel() == 0));
      covered = p.end(part);
    }
    CHECK(covered == d.n * d.s);
    if (d.n * d.s == 0) continue;
    // Offsets: channel c's elements, each once.
    std::vector<int> seen(d.n * d.c * d.s, 0);
    int64_t wrong_channel = 0;
    for (int64_t ch = 0; ch < d.c; ++ch)
      for (int64_t j = 0; j < p.per_channel(); ++j) {
        const int64_t off = p.offset(ch, j);
        wrong_channel += off / d.s % d.c != ch;
        ++seen[off];
      }
    CHECK(wrong_channel == 0);
    CHECK(std::all_of(seen.begin(), seen.end(), [](int k) { return k == 1; }));
    // Moments through the split, each chunk's threads merged in the kernel's
    // tree, against the CPU kernel.
    std::vector<double> v(d.n * d.c * d.s);
    std::mt19937_64 gen(d.n + d.s);
    std::uniform_real_distribution<double> u(-1, 1);
    for (size_t i = 0; i < v.size(); ++i)
      v[i] = 10.0 * (i / d.s % d.c) + u(gen);
    tpf::Tensor mean = tpf::zeros({d.c}, tpf::float64),
                var = tpf::zeros({d.c}, tpf::float64);
    tpf::cpu::channel_moments(tpf::from_vector(v, {d.n, d.c, d.s}), mean, var);
    const auto mv = mean.to_vector<double>(), vv = var.to_vector<double>();
    for (int64_t ch = 0; ch < d.c; ++ch) {
      tpf::WelfordMoments<double> m;
      for (int64_t part = 0; part < p.splits; ++part) {
        std::vector<tpf::WelfordMoments<double>> threads(256);
        for (int64_t j = p.begin(part); j < p.end(part); ++j)
          threads[(j - p.begin(part)) % 256].add(v[p.offset(ch, j)]);
        m.merge(merge_tree(threads));
      }
      CHECK(std::abs(m.mean - mv[ch]) <=
            1e-12 * std::max(1.0, std::abs(mv[ch])));
      CHECK(std::abs(m.variance() - vv[ch]) <= 1e-12 * std::max(1.0, vv[ch]));
    }
  }
}

TEST_CASE("batch norm coefficients equal the CPU's forward and gradient") {
  const int64_t n = 4, c = 3, s = 11;
  std::mt19937_64 gen(3);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<double> xv(n * c * s), dyv(n * c * s);
  for (size_t i = 0; i < xv.size(); ++i) {
    xv[i] = 2.0 * (i / s % c) + u(gen);
    dyv[i] = u(gen);
  }
  const std::vector<double> scale{1.5, -0.5, 2.0}, offset{0.1, 0.2, -0.3},
      mean{0.05, 2.1, 3.9}, var{0.4, 0.3, 0.35};
  const double eps = 1e-3;
  const auto x = tpf::from_vector(xv, {n, c, s}),
             dy = tpf::from_vector(dyv, {n, c, s});
  const auto t = [](const std::vector<double>& v) {
    return tpf::from_vector(v, {int64_t(v.size())});
  };
  const auto y =
      run_cpu(tpf::cpu::batch_norm_direct, tpf::FusedBatchNorm{eps, false},
              {x, t(scale), t(offset), t(mean), t(var)},
              {x, t(mean), t(var)})[0]
          .to_vector<double>();
  int64_t wrong = 0;
  for (size_t i = 0; i < xv.size(); ++i) {
    const int64_t ch = i / s % c;
    const tpf::BatchNormAffine<double> f(scale[ch], offset[ch], mean[ch],
                                         var[ch], eps);
    wrong += ulps(std::fma(xv[i], f.a, f.b), y[i]) > 1;
  }
  CHECK(wrong == 0);
  for (bool training : {false, true}) {
    CAPTURE(training);
    const auto g = run_cpu(
        tpf::cpu::batch_norm_grad_direct, tpf::BatchNormGrad{eps, training},
        {x, dy, t(scale), t(mean), t(var)}, {x, t(mean), t(var)});
    const auto dx = g[0].to_vector<double>(), ds = g[1].to_vector<double>(),
               dof = g[2].to_vector<double>();
    for (int64_t ch = 0; ch < c; ++ch) {
      double sum_dy = 0, sum_dy_xc = 0;
      for (int64_t b = 0; b < n; ++b)
        for (int64_t k = 0; k < s; ++k) {
          const size_t i = (b * c + ch) * s + k;
          sum_dy += dyv[i];
          sum_dy_xc += dyv[i] * (xv[i] - mean[ch]);
        }
      const tpf::BatchNormGradCoefficients f(scale[ch], mean[ch], var[ch], eps,
                                             training, double(n * s), sum_dy,
                                             sum_dy_xc);
      CHECK(std::abs(f.dscale - ds[ch]) <= 1e-12 * std::abs(ds[ch]));
      CHECK(std::abs(f.doffset - dof[ch]) <= 1e-12 * std::abs(dof[ch]));
      for (int64_t b = 0; b < n; ++b)
        for (int64_t k = 0; k < s; ++k) {
          const size_t i = (b * c + ch) * s + k;
          const double want = std::fma(dyv[i], f.k, std::fma(xv[i], f.a, f.b));
          CHECK(std::abs(want - dx[i]) <=
                1e-12 * std::max(1.0, std::abs(dx[i])));
        }
    }
  }
}

TEST_CASE("fractional pool gradients gathered per element equal the CPU's") {
  // NHWC 2x7x9x3; rows and columns in gaps of 1 to 3, as the public
  // functions draw them.
  const tpf::Shape shape{2, 7, 9, 3};
  for (bool overlapping : {false, true}) {
    CAPTURE(overlapping);
    const tpf::FractionalRegions regions{
        {0, 2, 3, 5, 7}, {0, 1, 3, 6, 7, 9}, overlapping};
    const tpf::Tensor x = tied_values(shape, false, 42);
    const auto [y, ws] = tpf::apply(tpf::FractionalMaxPool{regions, true}, {x});
    const tpf::Tensor dy =
        tpf::random_uniform(y.shape(), -1.0, 1.0, tpf::float64);
    const auto max_dx =
        tpf::apply(tpf::FractionalMaxPoolGrad{regions, shape}, {dy, ws})
            .to_vector<double>();
    const auto avg_dx =
        tpf::apply(tpf::FractionalAvgPoolGrad{regions, shape}, {dy})
            .to_vector<double>();
    const auto dyv = dy.to_vector<double>();
    const auto wsv = ws.to_vector<int32_t>();
    const tpf::FractionalAxis rows{regions.rows.data(), 4, shape[1],
                                   overlapping},
        cols{regions.cols.data(), 5, shape[2], overlapping};
    const int64_t c = shape[3];
    const auto out_at = [&](int64_t img, int64_t r, int64_t oc) {
      return ((img * 4 + r) * 5 + oc) * c;
    };
    int64_t wrong_max = 0, wrong_avg = 0, covered = 0;
    for (int64_t img = 0; img < shape[0]; ++img)
      for (int64_t row = 0; row < shape[1]; ++row)
        for (int64_t col = 0; col < shape[2]; ++col)
          for (int64_t ch = 0; ch < c; ++ch) {
            int64_t rr[2], cc[2];
            const int nr = rows.cover(row, rr), nc = cols.cover(col, cc);
            tpf::fractional_adding_order(rr, nr);
            covered += nr * nc;
            double max_sum = 0, avg_sum = 0;
            for (int a = 0; a < nr; ++a)
              for (int b = 0; b < nc; ++b) {
                const int64_t o = out_at(img, rr[a], cc[b]) + ch;
                const int64_t k = wsv[o], width = cols.size(cc[b]);
                const int64_t at_row = rows.first(rr[a]) + k / width,
                              at_col = cols.first(cc[b]) + k % width;
                if (at_row == row && at_col == col) max_sum += dyv[o];
                avg_sum += dyv[o] / double(rows.size(rr[a]) * cols.size(cc[b]));
              }
            const int64_t i =
                ((img * shape[1] + row) * shape[2] + col) * c + ch;
            wrong_max += max_sum != max_dx[i];
            wrong_avg += avg_sum != avg_dx[i];
          }
    CHECK(wrong_max == 0);
    CHECK(wrong_avg == 0);
    // Every (region, element) pair once: the regions' sizes summed.
    int64_t pairs = 0;
    for (int64_t r = 0; r < 4; ++r)
      for (int64_t oc = 0; oc < 5; ++oc) pairs += rows.size(r) * cols.size(oc);
    CHECK(covered == pairs * shape[0] * c);
  }
}
