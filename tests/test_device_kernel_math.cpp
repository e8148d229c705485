// White-box: the math of the CUDA kernels that gather, merge and split
// (pool and fractional-pool gradients gathered per input element, argmax and
// argmin merged in a warp tree, batch norm's channel x split grid and
// coefficients, argsort's merge passes), compiled here by g++, against the
// CPU kernels' outputs.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
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
#include "core/sort_order.hpp"
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

TEST_CASE("argsort's merge passes give the CPU's stable sort") {
  // The CUDA kernel's passes run here one entry at a time, each pass into a
  // fresh buffer, over lines that hold ties, signed zeros and NaN.
  std::mt19937 gen(7);
  std::uniform_int_distribution<int> pick(0, 5);
  for (const int64_t n : {1, 2, 3, 5, 8, 13, 64, 100, 777}) {
    std::vector<float> values(n);
    for (float& v : values) {
      const int k = pick(gen);
      v = k == 0   ? std::numeric_limits<float>::quiet_NaN()
          : k == 1 ? -0.0f
                   : float(k % 3);
    }
    for (const bool descending : {false, true}) {
      CAPTURE(n);
      CAPTURE(descending);
      std::vector<float> keys = values;
      std::vector<int64_t> positions(n);
      std::iota(positions.begin(), positions.end(), int64_t{0});
      for (int64_t width = 1; width < n; width *= 2) {
        std::vector<float> next_keys(n);
        std::vector<int64_t> next_positions(n, -1);
        for (int64_t p = 0; p < n; ++p) {
          const int64_t to = tpf::merged_position(keys.data(), positions.data(),
                                                  n, p, width, descending);
          REQUIRE(next_positions[to] == -1);  // no two entries in one place
          next_keys[to] = keys[p];
          next_positions[to] = positions[p];
        }
        keys.swap(next_keys);
        positions.swap(next_positions);
      }
      std::vector<int64_t> expected(n);
      std::iota(expected.begin(), expected.end(), int64_t{0});
      std::stable_sort(
          expected.begin(), expected.end(), [&](int64_t a, int64_t b) {
            return tpf::sorts_before(values[a], values[b], descending);
          });
      CHECK(positions == expected);
    }
  }
}
