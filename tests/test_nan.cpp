// The NaN policy (docs/architecture.md, "NaN"): max/min reductions,
// argmax/argmin, maximum/minimum, relu/relu6/clip and max pooling propagate
// NaN as NumPy and PyTorch do, on every kernel path, and their gradients
// follow the forward's pick.
#include <cmath>
#include <limits>

#include "support/check.hpp"

using testing::uniform64;
namespace nn = tpf::nn;

namespace {

constexpr double kNan = std::numeric_limits<double>::quiet_NaN();

/** a == b elementwise, NaN equal to NaN. */
bool same(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!(a[i] == b[i] || (std::isnan(a[i]) && std::isnan(b[i])))) return false;
  return true;
}

std::vector<double> values(const tpf::Tensor& t) {
  return t.cast(tpf::float64).to_vector<double>();
}

/** NumPy's max (min) of a slice and argmax (argmin): the first NaN wins. */
struct Pick {
  double value;
  int64_t index;
};
Pick pick(const std::vector<double>& v, bool max) {
  Pick p{v[0], 0};
  for (int64_t i = 0; i < static_cast<int64_t>(v.size()); ++i) {
    if (std::isnan(v[i])) return {v[i], i};
    if (max ? v[i] > p.value : v[i] < p.value) p = {v[i], i};
  }
  return p;
}

/**
 * Checks max/min/argmax/argmin of (A, B) x along both axes against pick(),
 * x given contiguous and as a strided copy.
 */
void check_reductions(const tpf::Tensor& x) {
  const int64_t A = x.shape()[0], B = x.shape()[1];
  const auto v = values(x);
  for (const auto& in : {x, testing::strided_copy(x)}) {
    for (int64_t axis : {0, 1}) {
      CAPTURE(axis);
      const int64_t n = axis ? B : A, k = axis ? A : B;
      for (bool max : {true, false}) {
        CAPTURE(max);
        std::vector<double> want_v;
        std::vector<int64_t> want_i;
        for (int64_t j = 0; j < k; ++j) {
          std::vector<double> slice;
          for (int64_t i = 0; i < n; ++i)
            slice.push_back(axis ? v[j * B + i] : v[i * B + j]);
          const Pick p = pick(slice, max);
          want_v.push_back(p.value);
          want_i.push_back(p.index);
        }
        const auto got = max ? tpf::max(in, {axis}) : tpf::min(in, {axis});
        const auto idx = max ? tpf::argmax(in, axis) : tpf::argmin(in, axis);
        CHECK(same(values(got), want_v));
        CHECK(idx.to_vector<int64_t>() == want_i);
      }
    }
    const bool any_nan =
        std::any_of(v.begin(), v.end(), [](double e) { return std::isnan(e); });
    CHECK(std::isnan(values(tpf::max(in))[0]) == any_nan);
    CHECK(std::isnan(values(tpf::min(in))[0]) == any_nan);
  }
}

}  // namespace

TEST_CASE("max, min, argmax and argmin propagate the first NaN") {
  CHECK(std::isnan(tpf::max(tpf::tensor({kNan, 1.0, 2.0})).item<double>()));
  CHECK(tpf::argmax(tpf::tensor({1.0, kNan, 2.0, kNan})).item<int64_t>() == 1);
  CHECK(tpf::argmin(tpf::tensor({1.0, 0.5, kNan})).item<int64_t>() == 2);
  // Lengths past the xsimd batches (four accumulators and a tail) and the
  // parallel single-output path; NaN first, in the middle and last.
  for (tpf::DType dt : {tpf::float32, tpf::float64}) {
    for (const tpf::Shape& shape :
         {tpf::Shape{3, 5}, tpf::Shape{5, 71}, tpf::Shape{67, 9}}) {
      for (int where : {0, 1, 2}) {
        CAPTURE(dt);
        CAPTURE(shape.str());
        CAPTURE(where);
        auto v = uniform64(shape, -2.0, 2.0).to_vector<double>();
        const int64_t A = shape[0], B = shape[1];
        // One NaN per row at the first, a middle or the last column, and a
        // second, later one in row 1; column 2 holds NaN in every row.
        for (int64_t a = 0; a < A; a += 2)
          v[a * B + (where == 0 ? 0 : where == 1 ? B / 2 : B - 1)] = kNan;
        v[1 * B + B - 1] = kNan;
        v[1 * B + B / 2] = kNan;
        const auto x = tpf::from_vector(v, shape).cast(dt);
        check_reductions(x);
      }
    }
  }
  // The whole-tensor reductions of many elements (parallel partials), the
  // NaN in one partial only.
  auto v = uniform64({1, 1 << 17}).to_vector<double>();
  v[100000] = kNan;
  for (tpf::DType dt : {tpf::float32, tpf::float64}) {
    const auto x = tpf::from_vector(v, {1 << 17}).cast(dt);
    CHECK(std::isnan(values(tpf::max(x))[0]));
    CHECK(std::isnan(values(tpf::min(x))[0]));
    CHECK(tpf::argmax(x).item<int64_t>() == 100000);
    CHECK(tpf::argmin(x).item<int64_t>() == 100000);
  }
}

TEST_CASE("max over the N, H, W runs of NCHW and over outer axes sees NaN") {
  // (2, 3, 4, 8): reducing (0, 2, 3) combines runs of 32 in place; (0)
  // combines whole rows; a NaN reaches only its own channel or column.
  auto v = uniform64({2, 3, 4, 8}).to_vector<double>();
  v[((1 * 3 + 1) * 4 + 2) * 8 + 5] = kNan;  // n 1, c 1, h 2, w 5
  for (tpf::DType dt : {tpf::float32, tpf::float64}) {
    const auto x = tpf::from_vector(v, {2, 3, 4, 8}).cast(dt);
    for (bool max : {true, false}) {
      const auto c =
          values(max ? tpf::max(x, {0, 2, 3}) : tpf::min(x, {0, 2, 3}));
      CHECK(!std::isnan(c[0]));
      CHECK(std::isnan(c[1]));
      CHECK(!std::isnan(c[2]));
      const auto n = values(max ? tpf::max(x, {0}) : tpf::min(x, {0}));
      for (int64_t i = 0; i < 3 * 4 * 8; ++i)
        CHECK(std::isnan(n[i]) == (i == (1 * 4 + 2) * 8 + 5));
    }
  }
}

TEST_CASE("the gradient of a NaN max or min is shared among the NaNs") {
  for (bool max : {true, false}) {
    const auto x = tpf::tensor({{1.0, kNan, 3.0, kNan}, {1.0, 5.0, 5.0, 2.0}});
    tpf::GradientTape tape;
    tape.watch(x);
    const auto y = max ? tpf::max(x, {1}) : tpf::min(x, {1});
    const auto dx = tape.gradient(y, {x}, {tpf::tensor({4.0, 6.0})})[0];
    CHECK(same(values(dx), max ? std::vector<double>{0, 2, 0, 2, 0, 3, 3, 0}
                               : std::vector<double>{0, 2, 0, 2, 6, 0, 0, 0}));
  }
}

TEST_CASE("maximum and minimum are NaN where either operand is") {
  // Both argument orders, broadcasting a column against a row, NaN in both.
  const auto row = tpf::tensor({{kNan, 1.0, 2.0, kNan, -1.0}});
  const auto col = tpf::tensor({{1.5}, {kNan}, {0.0}});
  for (tpf::DType dt : {tpf::float32, tpf::float64}) {
    const auto a = row.cast(dt), b = col.cast(dt);
    for (bool max : {true, false}) {
      std::vector<double> want;
      const auto r = values(row), c = values(col);
      for (double ci : c)
        for (double ri : r)
          want.push_back(std::isnan(ri) || std::isnan(ci) ? kNan
                         : max                            ? std::max(ri, ci)
                                                          : std::min(ri, ci));
      const auto f = max ? tpf::maximum : tpf::minimum;
      CHECK(same(values(f(a, b)), want));
      CHECK(same(values(f(b, a)), want));
    }
  }
  // Contiguous rows of xsimd batches and their scalar tail.
  auto v = uniform64({37}).to_vector<double>(), w = v;
  v[3] = kNan, w[20] = kNan, v[36] = kNan, w[35] = kNan;
  for (tpf::DType dt : {tpf::float32, tpf::float64}) {
    const auto x = tpf::from_vector(v, {37}).cast(dt);
    const auto y = tpf::from_vector(w, {37}).cast(dt);
    for (const auto& m : {tpf::maximum(x, y), tpf::maximum(y, x),
                          tpf::minimum(x, y), tpf::minimum(y, x)}) {
      const auto got = values(m);
      for (int i = 0; i < 37; ++i)
        CHECK(std::isnan(got[i]) == (i == 3 || i == 20 || i == 35 || i == 36));
    }
  }
}

TEST_CASE("the gradient of maximum and minimum goes to the NaN operand") {
  const auto x = tpf::tensor({kNan, 1.0, kNan, 2.0});
  const auto y = tpf::tensor({1.0, kNan, kNan, 2.0});
  for (auto f : {tpf::maximum, tpf::minimum}) {
    tpf::GradientTape tape;
    tape.watch(x);
    tape.watch(y);
    const auto g = tape.gradient(f(x, y), {x, y}, {tpf::ones({4})});
    CHECK(values(g[0]) == std::vector<double>{1, 0, 1, 1});
    CHECK(values(g[1]) == std::vector<double>{0, 1, 0, 0});
  }
}

TEST_CASE("relu, relu6 and clip keep NaN, as PyTorch") {
  auto v = uniform64({37}, -8.0, 8.0).to_vector<double>();
  v[0] = kNan, v[17] = kNan, v[36] = kNan;
  for (tpf::DType dt : {tpf::float32, tpf::float64}) {
    const auto x = tpf::from_vector(v, {37}).cast(dt);
    for (const auto& y :
         {tpf::relu(x), nn::relu6(x), tpf::clip(x, -1.0, 1.0)}) {
      const auto got = values(y);
      for (int i = 0; i < 37; ++i)
        CHECK(std::isnan(got[i]) == std::isnan(v[i]));
    }
    // relu passes the gradient where its output is NaN (threshold_backward).
    tpf::GradientTape tape;
    tape.watch(x);
    const auto dx = tape.gradient(tpf::relu(x), {x})[0];
    const auto g = values(dx);
    for (int i = 0; i < 37; ++i)
      CHECK(g[i] == (std::isnan(v[i]) || v[i] > 0 ? 1.0 : 0.0));
  }
}

namespace {

/** Max pooling of channels-first x by hand: values and plane offsets. */
struct PoolRef {
  std::vector<double> y;
  std::vector<int64_t> at;  // offset within the plane of each pick
  tpf::Shape shape;
};
PoolRef pool_ref(const std::vector<double>& v, const tpf::Shape& s,
                 const nn::PoolOptions& o) {
  const int nd = static_cast<int>(s.size()) - 2;
  const auto st = o.strides.empty() ? o.ksize : o.strides;
  int64_t in[3] = {1, 1, 1}, k[3] = {1, 1, 1}, str[3] = {1, 1, 1},
          out[3] = {1, 1, 1}, lo[3] = {0, 0, 0};
  PoolRef r;
  r.shape = {s[0], s[1]};
  for (int i = 0; i < nd; ++i) {
    const int j = 3 - nd + i;
    in[j] = s[2 + i], k[j] = o.ksize[i], str[j] = st[i];
    if (o.padding == "SAME") {
      out[j] = (in[j] + str[j] - 1) / str[j];
      lo[j] = std::max<int64_t>((out[j] - 1) * str[j] + k[j] - in[j], 0) / 2;
    } else {
      out[j] = (in[j] - k[j]) / str[j] + 1;
    }
    r.shape.push_back(out[j]);
  }
  const int64_t plane = in[0] * in[1] * in[2];
  for (int64_t p = 0; p < s[0] * s[1]; ++p)
    for (int64_t a = 0; a < out[0]; ++a)
      for (int64_t b = 0; b < out[1]; ++b)
        for (int64_t c = 0; c < out[2]; ++c) {
          std::vector<double> window;
          std::vector<int64_t> offset;
          for (int64_t d = a * str[0] - lo[0]; d < a * str[0] - lo[0] + k[0];
               ++d)
            for (int64_t h = b * str[1] - lo[1]; h < b * str[1] - lo[1] + k[1];
                 ++h)
              for (int64_t w = c * str[2] - lo[2];
                   w < c * str[2] - lo[2] + k[2]; ++w) {
                if (d < 0 || h < 0 || w < 0 || d >= in[0] || h >= in[1] ||
                    w >= in[2])
                  continue;
                offset.push_back((d * in[1] + h) * in[2] + w);
                window.push_back(v[p * plane + offset.back()]);
              }
          const Pick m = pick(window, true);
          r.y.push_back(m.value);
          r.at.push_back(offset[m.index]);
        }
  return r;
}

using PoolFn = tpf::Tensor (*)(const tpf::Tensor&, const nn::PoolOptions&);

/**
 * For every window position q: NaN at position q of every other window (in
 * row-major window order; overlapping windows see it elsewhere), then forward
 * and gradient against pool_ref.
 */
void check_pool_nan(PoolFn f, const tpf::Shape& s, const nn::PoolOptions& o,
                    tpf::DType dt) {
  const int nd = static_cast<int>(s.size()) - 2;
  const auto st = o.strides.empty() ? o.ksize : o.strides;
  int64_t window = 1;
  for (int64_t e : o.ksize) window *= e;
  // Values float32 holds exactly, so both dtypes match pool_ref's.
  const auto base =
      uniform64(s, -4.0, 4.0).cast(tpf::float32).to_vector<double>();
  const PoolRef plain = pool_ref(base, s, o);
  for (int64_t q = 0; q < window; ++q) {
    CAPTURE(q);
    auto v = base;
    int64_t flat = 0;
    // Element q of each window of the unpadded grid; pool_ref finds what
    // each (padded, overlapping) window then holds.
    std::vector<int64_t> out(plain.shape.begin() + 2, plain.shape.end());
    const int64_t planes = s[0] * s[1];
    int64_t plane = 1;
    for (int i = 0; i < nd; ++i) plane *= s[2 + i];
    int64_t outs = 1;
    for (int64_t e : out) outs *= e;
    for (int64_t p = 0; p < planes; ++p)
      for (int64_t oi = 0; oi < outs; ++oi, ++flat) {
        if (flat % 2) continue;
        int64_t rest = oi, kq = q, off = 0, scale = 1;
        bool inside = true;
        for (int i = nd - 1; i >= 0; --i) {
          const int64_t coord = rest % out[i] * st[i] + kq % o.ksize[i];
          rest /= out[i], kq /= o.ksize[i];
          inside = inside && coord < s[2 + i];
          off += coord * scale;
          scale *= s[2 + i];
        }
        if (inside) v[p * plane + off] = kNan;
      }
    const PoolRef ref = pool_ref(v, s, o);
    const auto x = tpf::from_vector(v, s).cast(dt);
    const auto dy = tpf::reshape(
        tpf::arange<double>(1, static_cast<double>(ref.y.size()) + 1),
        ref.shape);
    tpf::GradientTape tape;
    tape.watch(x);
    const auto y = f(x, o);
    const auto dx = tape.gradient(y, {x}, {dy.cast(dt)})[0];
    CHECK(same(values(y), ref.y));
    std::vector<double> want_dx(v.size(), 0.0);
    for (size_t i = 0; i < ref.at.size(); ++i)
      want_dx[i / (ref.y.size() / planes) * plane + ref.at[i]] += i + 1.0;
    CHECK(values(dx) == want_dx);
    // Without a tape: the inference kernels (no workspace).
    CHECK(same(values(f(x, o)), ref.y));
  }
}

}  // namespace

TEST_CASE("a max-pool window holding NaN pools to its first NaN") {
  struct Case {
    int nd;
    tpf::Shape shape;
    nn::PoolOptions o;
  };
  static const PoolFn fns[] = {nn::max_pool1d, nn::max_pool2d, nn::max_pool3d};
  const Case cases[] = {
      {2, {1, 2, 4, 36}, {{2, 2}, {2, 2}}},  // float32: xsimd 2x2 batches
      {2, {1, 1, 2, 2}, {{2, 2}, {2, 2}}},   // float32: a staged narrow row
      {2, {2, 3, 5, 9}, {{2, 2}, {2, 2}}},   // odd extents
      {2, {1, 2, 7, 9}, {{3, 3}, {2, 2}, "SAME"}},   // float32: oneDNN
      {1, {2, 3, 11}, {{3}, {2}}},                   // float32: oneDNN
      {3, {1, 2, 5, 4, 6}, {{2, 2, 3}, {1, 2, 2}}},  // float32: oneDNN
  };
  for (const Case& c : cases)
    for (tpf::DType dt : {tpf::float32, tpf::float64}) {
      CAPTURE(c.shape.str());
      CAPTURE(dt);
      check_pool_nan(fns[c.nd - 1], c.shape, c.o, dt);
    }
}

TEST_CASE("max_pool2d_with_argmax points at the first NaN of a window") {
  // NCHW (1, 2, 2, 4): channel 0's first window holds NaN at (1, 0) and
  // (1, 1), after its maximum; channel 1's second window at (0, 3).
  std::vector<double> v{1,    9,    2, 3,     //
                        kNan, kNan, 4, 0,     //
                        5,    6,    7, kNan,  //
                        8,    1,    2, 3};
  for (tpf::DType dt : {tpf::float32, tpf::float64}) {
    const auto x = tpf::from_vector(v, {1, 2, 2, 4}).cast(dt);
    auto [y, idx] = nn::max_pool2d_with_argmax(x, {{2, 2}, {2, 2}});
    CHECK(same(values(y), {kNan, 4, 8, kNan}));
    // NHWC positions (h * W + w) * C + c.
    CHECK(idx.to_vector<int64_t>() ==
          std::vector<int64_t>{(1 * 4 + 0) * 2, (1 * 4 + 2) * 2,
                               (1 * 4 + 0) * 2 + 1, (0 * 4 + 3) * 2 + 1});
  }
}

TEST_CASE("float32 2x2 max pooling keeps signed zeros, NaN and infinities") {
  // Zeros of both signs tie with each other: the window's first one is the
  // maximum (its sign included) and takes the gradient. Some rows also hold
  // NaN (the first one wins) or an infinity, alone or beside its negative:
  // the batches holding them take the xsimd kernel's exact path, the others
  // its tree of maxima; both must match the float64 direct loops.
  const double inf = std::numeric_limits<double>::infinity(),
               nan = std::numeric_limits<double>::quiet_NaN();
  const double plain[] = {-0.0, 0.0, -1.0}, special[] = {nan, inf, -inf, 2.0};
  const tpf::Shape shape{2, 3, 8, 22};
  std::vector<double> v(shape.numel());
  for (size_t i = 0; i < v.size(); ++i) {
    const uint32_t h = static_cast<uint32_t>(i) * 2654435761u >> 7;
    const bool row_of_specials = (i / shape[3]) % 8 == 5;
    v[i] = row_of_specials && h % 3 == 0 ? special[h / 3 % 4] : plain[h % 3];
  }
  const auto x = tpf::from_vector(v, shape);
  const nn::PoolOptions o{{2, 2}, {2, 2}};
  auto pool = [&](tpf::DType dt) {
    const auto xd = x.cast(dt);
    tpf::GradientTape tape;
    tape.watch(xd);
    const auto y = nn::max_pool2d(xd, o);
    const auto dy =
        tpf::reshape(tpf::arange<double>(1, y.numel() + 1.0), y.shape());
    const auto dx = tape.gradient(y, {xd}, {dy.cast(dt)})[0];
    return std::pair{y.cast(tpf::float64).to_vector<double>(),
                     dx.cast(tpf::float64).to_vector<double>()};
  };
  const auto [y32, dx32] = pool(tpf::float32);
  const auto [y64, dx64] = pool(tpf::float64);
  REQUIRE(y32.size() == y64.size());
  int nans = 0, negative_zeros = 0, infinities = 0;
  for (size_t i = 0; i < y32.size(); ++i) {
    CAPTURE(i);
    CHECK(std::isnan(y32[i]) == std::isnan(y64[i]));
    if (std::isnan(y64[i])) {
      ++nans;
      continue;
    }
    CHECK(y32[i] == y64[i]);
    CHECK(std::signbit(y32[i]) == std::signbit(y64[i]));
    negative_zeros += y64[i] == 0 && std::signbit(y64[i]);
    infinities += std::isinf(y64[i]);
  }
  CHECK(dx32 == dx64);
  // The data exercise both paths: NaN windows, negative-zero maxima and
  // infinite ones (a lone infinity takes the tree).
  CHECK(nans > 0);
  CHECK(negative_zeros > 0);
  CHECK(infinities > 0);
}
