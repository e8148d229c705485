// Pooling: direct-loop references for every option combination, OpCase rows
// with float64 gradcheck, second order, errors (max_pool2d_with_argmax's
// indices: test_pool_argmax.cpp).
#include <algorithm>
#include <cmath>
#include <limits>

#include "support/check.hpp"

using testing::OpCase;
using testing::uniform64;
using Ts = std::vector<tpf::Tensor>;
namespace nn = tpf::nn;

using testing::expect_error;

namespace {

using PoolFn = tpf::Tensor (*)(const tpf::Tensor&, const nn::PoolOptions&);
PoolFn pool_fn(int nd, bool max) {
  static const PoolFn maxes[] = {nn::max_pool1d, nn::max_pool2d,
                                 nn::max_pool3d};
  static const PoolFn avgs[] = {nn::avg_pool1d, nn::avg_pool2d, nn::avg_pool3d};
  return max ? maxes[nd - 1] : avgs[nd - 1];
}

/** Reference pooling of channels-first float64 x, written independently. */
tpf::Tensor ref_pool(const tpf::Tensor& x, const nn::PoolOptions& o, bool max) {
  const auto& s = x.shape();
  const int nd = static_cast<int>(s.size()) - 2;
  const auto strides = o.strides.empty() ? o.ksize : o.strides;
  int64_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1}, k[3] = {1, 1, 1},
          st[3] = {1, 1, 1}, lo[3] = {0, 0, 0};
  for (int i = 0; i < nd; ++i) {
    const int a = 3 - nd + i;
    in[a] = s[2 + i], k[a] = o.ksize[i], st[a] = strides[i];
    if (o.padding == "SAME") {
      out[a] = (in[a] + st[a] - 1) / st[a];
      lo[a] = std::max<int64_t>((out[a] - 1) * st[a] + k[a] - in[a], 0) / 2;
    } else {
      out[a] = (in[a] - k[a]) / st[a] + 1;
    }
  }
  const auto v = x.to_vector<double>();
  std::vector<double> r;
  for (int64_t p = 0; p < s[0] * s[1]; ++p)
    for (int64_t a = 0; a < out[0]; ++a)
      for (int64_t b = 0; b < out[1]; ++b)
        for (int64_t c = 0; c < out[2]; ++c) {
          double acc = max ? -std::numeric_limits<double>::infinity() : 0.0;
          int64_t n = 0;
          for (int64_t i = 0; i < k[0]; ++i)
            for (int64_t j = 0; j < k[1]; ++j)
              for (int64_t l = 0; l < k[2]; ++l) {
                const int64_t d = a * st[0] - lo[0] + i,
                              h = b * st[1] - lo[1] + j,
                              w = c * st[2] - lo[2] + l;
                if (d < 0 || h < 0 || w < 0 || d >= in[0] || h >= in[1] ||
                    w >= in[2])
                  continue;
                const double e = v[((p * in[0] + d) * in[1] + h) * in[2] + w];
                acc = max ? std::max(acc, e) : acc + e;
                ++n;
              }
          const int64_t all = k[0] * k[1] * k[2];
          r.push_back(max ? acc : acc / (o.count_include_pad ? all : n));
        }
  std::vector<int64_t> shape{s[0], s[1]};
  for (int i = 0; i < nd; ++i) shape.push_back(out[3 - nd + i]);
  return tpf::from_vector(r, tpf::Shape(shape));
}

std::vector<int64_t> to_last(int nd) {
  std::vector<int64_t> p{0};
  for (int i = 2; i < nd + 2; ++i) p.push_back(i);
  p.push_back(1);
  return p;
}
std::vector<int64_t> to_first(int nd) {
  std::vector<int64_t> p{0, nd + 1};
  for (int i = 1; i <= nd; ++i) p.push_back(i);
  return p;
}

const char* kFirst[] = {"NCW", "NCHW", "NCDHW"};
const char* kLast[] = {"NWC", "NHWC", "NDHWC"};

}  // namespace

TEST_CASE("pooling matches a direct reference for every option") {
  const tpf::Shape shapes[] = {{2, 3, 7}, {2, 3, 5, 7}, {1, 2, 5, 3, 4}};
  const std::vector<int64_t> ks[] = {{3}, {3, 2}, {2, 3, 2}};
  for (int nd = 1; nd <= 3; ++nd) {
    const auto x = uniform64(shapes[nd - 1]);
    const auto k = ks[nd - 1];
    const std::vector<std::vector<int64_t>> stride_sets = {
        {}, std::vector<int64_t>(nd, 1), std::vector<int64_t>(nd, 2)};
    for (bool max : {true, false})
      for (const auto& st : stride_sets)
        for (const char* pad : {"VALID", "SAME"})
          for (bool last : {false, true})
            for (bool incl : {false, true}) {
              if (max && incl) continue;
              nn::PoolOptions o{k, st, pad,
                                last ? kLast[nd - 1] : kFirst[nd - 1], incl};
              CAPTURE(nd);
              CAPTURE(max);
              CAPTURE(st.size() ? st[0] : 0);
              CAPTURE(pad);
              CAPTURE(last);
              CAPTURE(incl);
              const auto expect = ref_pool(x, o, max);
              const auto in = last ? tpf::transpose(x, to_last(nd)) : x;
              auto fn = pool_fn(nd, max);
              auto y64 = fn(in, o);
              auto y32 = fn(in.cast(tpf::float32).contiguous(), o);
              if (last) {
                y64 = tpf::transpose(y64, to_first(nd));
                y32 = tpf::transpose(y32, to_first(nd));
              }
              CHECK(y64.dtype() == tpf::float64);
              CHECK(y32.dtype() == tpf::float32);
              CHECK_CLOSE(y64, expect, 1e-12, 1e-12);
              CHECK_CLOSE(y32.cast(tpf::float64), expect, 1e-5, 1e-6);
            }
  }
}

TEST_CASE("pooling gradients match float64 finite differences") {
  auto p = [](PoolFn f, nn::PoolOptions o) {
    return [f, o](const Ts& in) { return f(in[0], o); };
  };
  const auto x1 = uniform64({2, 3, 7}), x2 = uniform64({2, 5, 6, 3}),
             x3 = uniform64({1, 2, 5, 3, 4});
  const std::vector<OpCase> cases = {
      {"max_pool1d",
       p(nn::max_pool1d, {{3}, {2}}),
       {x1},
       ref_pool(x1, {{3}, {2}}, true)},
      {"max_pool2d_nhwc_same",
       p(nn::max_pool2d, {{3, 2}, {2, 1}, "SAME", "NHWC"}),
       {x2},
       tpf::transpose(ref_pool(tpf::transpose(x2, {0, 3, 1, 2}),
                               {{3, 2}, {2, 1}, "SAME"}, true),
                      {0, 2, 3, 1})},
      {"max_pool3d_same",
       p(nn::max_pool3d, {{2, 2, 2}, {1, 2, 2}, "SAME"}),
       {x3},
       ref_pool(x3, {{2, 2, 2}, {1, 2, 2}, "SAME"}, true)},
      {"avg_pool1d_same",
       p(nn::avg_pool1d, {{3}, {2}, "SAME"}),
       {x1},
       ref_pool(x1, {{3}, {2}, "SAME"}, false)},
      {"avg_pool2d_include_pad",
       p(nn::avg_pool2d, {{3, 3}, {2, 2}, "SAME", "NCHW", true}),
       {x2},
       ref_pool(x2, {{3, 3}, {2, 2}, "SAME", "NCHW", true}, false)},
      {"avg_pool3d",
       p(nn::avg_pool3d, {{2, 3, 2}, {1, 1, 2}}),
       {x3},
       ref_pool(x3, {{2, 3, 2}, {1, 1, 2}}, false)},
  };
  for (const auto& c : cases) testing::run_op_case(c);
}

TEST_CASE("pool gradient ops are differentiable again") {
  // f(x, g) = the tape's vjp of pool at x for cotangent g: checks the vjps
  // of MaxPoolScatter (a gather through the workspace) and AvgPoolGrad (avg
  // pooling of gg).
  for (bool max : {true, false}) {
    CAPTURE(max);
    const nn::PoolOptions o{{3, 2}, {2, 1}, "SAME"};
    const auto x = uniform64({2, 3, 5, 4});
    const auto g = uniform64(ref_pool(x, o, true).shape());
    const auto why = testing::gradcheck(
        [&](const Ts& in) {
          tpf::GradientTape tape;
          tape.watch(in[0]);
          const auto y =
              max ? nn::max_pool2d(in[0], o) : nn::avg_pool2d(in[0], o);
          return tape.gradient(y, {in[0]}, {in[1]})[0];
        },
        {x, g});
    CHECK_MESSAGE(why.empty(), why);
  }
}

namespace {
/** Gradient of max pool `f` at x for cotangent g (both float64) in `dt`. */
tpf::Tensor pool_grad(PoolFn f, const nn::PoolOptions& o, const tpf::Tensor& x,
                      const tpf::Tensor& g, tpf::DType dt) {
  const auto xd = x.cast(dt).contiguous();
  tpf::GradientTape tape;
  tape.watch(xd);
  const auto y = f(xd, o);
  return tape.gradient(y, {xd}, {g.cast(dt)})[0].cast(tpf::float64);
}
}  // namespace

TEST_CASE("float32 max pooling kernels route gradients like float64's") {
  // Values on a coarse grid, so windows hold ties: the first maximum in
  // row-major window order takes the gradient in every kernel (the xsimd
  // 2x2/2 one, oneDNN's workspace, the float64 direct loops).
  struct Case {
    int nd;
    tpf::Shape shape;
    nn::PoolOptions o;
  };
  const Case cases[] = {
      {2, {2, 3, 4, 16}, {{2, 2}, {2, 2}}},  // xsimd, W/2 = 8
      {2, {2, 3, 6, 28}, {{2, 2}, {2, 2}}},  // xsimd, overlapping tail
      {2, {2, 3, 6, 20}, {{2, 2}, {2, 2}, "VALID", "NHWC"}},  // via a copy
      {2, {2, 3, 5, 17}, {{2, 2}, {2, 2}}},                   // odd: oneDNN
      {2, {2, 3, 7, 9}, {{3, 3}, {2, 2}, "SAME"}},            // padding: oneDNN
      {1, {2, 3, 11}, {{3}, {2}, "SAME"}},
      {3, {1, 2, 5, 4, 6}, {{2, 2, 3}, {1, 2, 2}, "SAME"}},
  };
  for (const Case& c : cases) {
    CAPTURE(c.shape.str());
    auto x = uniform64(c.shape, 0.0, 3.0).cast(tpf::int32).cast(tpf::float64);
    if (c.o.data_format == "NHWC") x = tpf::transpose(x, {0, 2, 3, 1});
    const PoolFn f = pool_fn(c.nd, true);
    const auto y = f(x, c.o);
    const auto g = uniform64(y.shape());
    CHECK_CLOSE(f(x.cast(tpf::float32), c.o).cast(tpf::float64), y);
    CHECK_CLOSE(pool_grad(f, c.o, x, g, tpf::float32),
                pool_grad(f, c.o, x, g, tpf::float64), 1e-6, 1e-7);
  }
}

TEST_CASE("float32 2x2 max pooling equals the float64 direct loops") {
  // Narrow rows (fewer outputs than a vector holds), odd extents, rows
  // shorter than a vector, and enough planes that three threads split them
  // (their last row pairs go through a padded copy). Values on a grid of
  // three, so windows hold ties; float32 holds every value exactly, so the
  // xsimd kernels must match the direct loops bit for bit: forward, the
  // gradient's scatter and the second order's gather.
  const tpf::Shape shapes[] = {{2, 3, 14, 14}, {2, 3, 6, 7},   {2, 3, 7, 6},
                               {2, 3, 7, 7},   {1, 2, 2, 2},   {1, 3, 3, 3},
                               {2, 2, 5, 37},  {2, 3, 4, 33},  {4, 130, 14, 14},
                               {8, 140, 7, 9}, {4, 2800, 2, 3}};
  const nn::PoolOptions o{{2, 2}, {2, 2}};
  const int threads = tpf::config::intra_op_threads();
  tpf::config::set_intra_op_threads(3);
  for (const tpf::Shape& shape : shapes) {
    CAPTURE(shape.str());
    const auto x = uniform64(shape, 0.0, 3.0).cast(tpf::int32);
    const auto y64 = nn::max_pool2d(x.cast(tpf::float64), o);
    const auto dy = uniform64(y64.shape()).cast(tpf::float32);
    const auto h = uniform64(shape).cast(tpf::float32);
    auto grads = [&](tpf::DType dt) {
      const auto xd = x.cast(dt), dyd = dy.cast(dt), hd = h.cast(dt);
      tpf::GradientTape outer;
      outer.watch(dyd);
      tpf::GradientTape tape;
      tape.watch(xd);
      const auto y = nn::max_pool2d(xd, o);
      const auto dx = tape.gradient(y, {xd}, {dyd})[0];
      const auto gather = outer.gradient(dx, {dyd}, {hd})[0];
      return std::vector<std::vector<double>>{
          y.cast(tpf::float64).to_vector<double>(),
          dx.cast(tpf::float64).to_vector<double>(),
          gather.cast(tpf::float64).to_vector<double>()};
    };
    const auto r32 = grads(tpf::float32), r64 = grads(tpf::float64);
    CHECK(r32[0] == y64.to_vector<double>());
    CHECK(r32[0] == r64[0]);
    CHECK(r32[1] == r64[1]);
    CHECK(r32[2] == r64[2]);
  }
  tpf::config::set_intra_op_threads(threads);
}

TEST_CASE("2x2 max pooling of an odd plane by hand") {
  // 3x5 plane: windows cover rows 0-1 and columns 0-3; row 2 and column 4
  // take no gradient. The ties (window 1: 7 at indices 1 and 2) go to the
  // first in row-major order.
  const std::vector<double> v{1, 4, 2, 7, 9,  //
                              3, 2, 7, 5, 9,  //
                              9, 9, 9, 9, 9};
  for (tpf::DType dt : {tpf::float32, tpf::float64}) {
    const auto x = tpf::from_vector(v, {1, 1, 3, 5}).cast(dt);
    tpf::GradientTape tape;
    tape.watch(x);
    const auto y = nn::max_pool2d(x, {{2, 2}, {2, 2}});
    const auto dx = tape.gradient(
        y, {x}, {tpf::from_vector<double>({10, 20}, {1, 1, 1, 2}).cast(dt)})[0];
    CHECK(y.cast(tpf::float64).to_vector<double>() ==
          std::vector<double>{4, 7});
    CHECK(dx.cast(tpf::float64).to_vector<double>() ==
          std::vector<double>{0, 10, 0, 20, 0,  //
                              0, 0, 0, 0, 0,    //
                              0, 0, 0, 0, 0});
  }
}

TEST_CASE("2x2 max pooling of equal values routes to each window's corner") {
  // All values tie, so dx holds dy at (2i, 2j) of every plane, 0 elsewhere.
  for (tpf::DType dt : {tpf::float32, tpf::float64}) {
    const auto x = tpf::zeros({1, 2, 4, 16}, dt);
    const auto dy = tpf::reshape(tpf::arange<double>(1, 33), {1, 2, 2, 8});
    tpf::GradientTape tape;
    tape.watch(x);
    const auto y = nn::max_pool2d(x, {{2, 2}, {2, 2}});
    const auto dx = tape.gradient(y, {x}, {dy.cast(dt)})[0];
    std::vector<double> expect(64 * 2, 0.0);
    for (int p = 0; p < 2; ++p)
      for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 8; ++j)
          expect[(p * 4 + 2 * i) * 16 + 2 * j] = 1 + (p * 2 + i) * 8 + j;
    CHECK(y.to_vector<double>() == std::vector<double>(32, 0.0));
    CHECK(dx.cast(tpf::float64).to_vector<double>() == expect);
  }
}

TEST_CASE("pooling argument errors") {
  const auto x = tpf::ones({1, 2, 4, 4}, tpf::float32);
  const char* p = "[max_pool2d] expected";
  expect_error<tpf::ShapeError>(
      [&] {
        nn::max_pool2d(tpf::ones({2, 4, 4}), {{2, 2}});
      },
      p);
  expect_error<tpf::ValueError>([&] { nn::max_pool2d(x, {{2, 2, 2}}); }, p);
  expect_error<tpf::ValueError>([&] { nn::max_pool2d(x, {{2, 0}}); }, p);
  expect_error<tpf::ValueError>(
      [&] {
        nn::max_pool2d(x, {{2, 2}, {1, 1, 1}});
      },
      p);
  expect_error<tpf::ValueError>(
      [&] {
        nn::max_pool2d(x, {{2, 2}, {1, -1}});
      },
      p);
  expect_error<tpf::ValueError>(
      [&] {
        nn::max_pool2d(x, {{2, 2}, {}, "FULL"});
      },
      p);
  expect_error<tpf::ValueError>(
      [&] {
        nn::max_pool2d(x, {{2, 2}, {}, "VALID", "NCWH"});
      },
      p);
  expect_error<tpf::ShapeError>([&] { nn::max_pool2d(x, {{5, 2}}); }, p);
  expect_error<tpf::DTypeError>(
      [&] {
        nn::max_pool2d(tpf::ones({1, 2, 4, 4}, tpf::int32), {{2, 2}});
      },
      p);
  expect_error<tpf::ShapeError>([&] { nn::avg_pool1d(x, {{2}}); },
                                "[avg_pool1d] expected");
  expect_error<tpf::ValueError>(
      [&] {
        nn::avg_pool3d(tpf::ones({1, 1, 2, 2, 2}),
                       {{2, 2, 2}, {}, "SAME", "NHWC"});
      },
      "[avg_pool3d] expected");
  // SAME never rejects a window larger than the input.
  CHECK(nn::max_pool2d(x, {{5, 5}, {}, "SAME"}).shape() ==
        tpf::Shape{1, 2, 1, 1});
}

TEST_CASE("pooling takes one ksize or strides value for every spatial axis") {
  const tpf::Shape shapes[] = {{2, 3, 7, 6}, {1, 2, 6, 5, 7}};
  for (int nd : {2, 3}) {
    const auto x = uniform64(shapes[nd - 2]);
    const std::vector<int64_t> k(nd, 3), st(nd, 2);
    for (bool max : {true, false})
      for (const char* pad : {"VALID", "SAME"})
        for (const auto dtype : {tpf::float64, tpf::float32}) {
          CAPTURE(nd);
          CAPTURE(max);
          CAPTURE(pad);
          CAPTURE(tpf::dtype_name(dtype));
          const auto in = x.cast(dtype).contiguous();
          const auto fn = pool_fn(nd, max);
          const auto full = fn(in, {k, st, pad});
          CHECK_CLOSE(full.cast(tpf::float64), ref_pool(x, {k, st, pad}, max),
                      1e-5, 1e-6);
          const auto want = full.to_vector<double>();
          CHECK(fn(in, {{3}, {2}, pad}).to_vector<double>() == want);
          CHECK(fn(in, {{3}, st, pad}).to_vector<double>() == want);
          CHECK(fn(in, {k, {2}, pad}).to_vector<double>() == want);
          // No strides: the window's, broadcast like the window.
          CHECK(fn(in, {{3}, {}, pad}).to_vector<double>() ==
                fn(in, {k, {}, pad}).to_vector<double>());
        }
  }
  const auto x3 = tpf::ones({1, 1, 4, 4, 4});
  expect_error<tpf::ValueError>(
      [&] {
        nn::max_pool3d(x3, {{2, 2}});
      },
      "[max_pool3d] expected ksize of 1 or 3 values, got [2, 2]");
  expect_error<tpf::ValueError>(
      [&] {
        nn::avg_pool3d(x3, {{2}, {1, 1}});
      },
      "[avg_pool3d] expected strides of 1 or 3 values, got [1, 1]");
  expect_error<tpf::ValueError>(
      [&] { nn::max_pool3d(x3, {{}}); },
      "[max_pool3d] expected ksize of 1 or 3 values, got []");
  expect_error<tpf::ValueError>(
      [&] { nn::max_pool3d(x3, {{0}}); },
      "[max_pool3d] expected positive ksize, got [0]");
}

TEST_CASE("degenerate inputs: OpCase rows") {
  using testing::degenerate;
  using testing::kNan;
  using testing::zeros64;
  const nn::PoolOptions k2{.ksize = {2, 2}};
  const nn::PoolOptions same{
      .ksize = {1, 1}, .strides = {2, 2}, .padding = "SAME"};
  const auto nan_window =
      tpf::reshape(tpf::tensor({kNan, 1.0, 2.0, 3.0}), {1, 1, 2, 2});
  const std::vector<OpCase> cases = {
      degenerate(
          "max_pool_no_channels",
          [=](const Ts& in) { return nn::max_pool2d(in[0], k2); },
          {zeros64({1, 0, 4, 4})}, zeros64({1, 0, 2, 2})),
      degenerate(
          "avg_pool_empty_batch",
          [=](const Ts& in) { return nn::avg_pool2d(in[0], k2); },
          {zeros64({0, 1, 4, 4})}, zeros64({0, 1, 2, 2})),
      degenerate(
          "max_pool_same_over_empty_axis",
          [=](const Ts& in) { return nn::max_pool2d(in[0], same); },
          {zeros64({2, 1, 0, 3})}, zeros64({2, 1, 0, 2})),
      degenerate(
          "max_pool_nan_window",
          [=](const Ts& in) { return nn::max_pool2d(in[0], k2); }, {nan_window},
          tpf::full({1, 1, 1, 1}, kNan, tpf::float64)),
      degenerate(
          "avg_pool_nan_window",
          [=](const Ts& in) { return nn::avg_pool2d(in[0], k2); }, {nan_window},
          tpf::full({1, 1, 1, 1}, kNan, tpf::float64)),
  };
  for (const auto& c : cases) testing::run_op_case(c);
}
