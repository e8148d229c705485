// Convolutions: every option combination against a reference written here
// (float32 through oneDNN, float64 through the direct kernels), OpCase rows
// with float64 gradcheck, transposes as gradients, bias. Second-order
// gradients and argument errors: test_conv_grad_errors.cpp.
#include <cmath>
#include <string>

#include "support/check.hpp"

using testing::expect_error;
using testing::OpCase;
using testing::uniform64;
using Ts = std::vector<tpf::Tensor>;
using Opts = tpf::nn::ConvOptions;
using V = std::vector<int64_t>;

namespace {

/** Geometry of the reference: channels-first, per-axis lists. */
struct Ref {
  V stride, dil, pad_before;
  int64_t groups = 1;
};

/** Strides of a row-major array with extents `dims`. */
V row_major(const V& dims) {
  V s(dims.size(), 1);
  for (int64_t i = static_cast<int64_t>(dims.size()) - 2; i >= 0; --i)
    s[i] = s[i + 1] * dims[i + 1];
  return s;
}

/** Decodes flat index `f` of a row-major array with extents `dims`. */
V unflatten(int64_t f, const V& dims) {
  V idx(dims.size());
  for (int64_t i = static_cast<int64_t>(dims.size()) - 1; i >= 0; --i) {
    idx[i] = f % dims[i];
    f /= dims[i];
  }
  return idx;
}

int64_t prod(const V& v) {
  int64_t p = 1;
  for (int64_t e : v) p *= e;
  return p;
}

/**
 * Output-stationary reference: for each output element, the sum over its
 * group's input channels and the filter taps, with index arithmetic per axis.
 */
tpf::Tensor reference_conv(const tpf::Tensor& x, const tpf::Tensor& w,
                           const Ref& r, const V& out_sp) {
  const V xs = x.shape().to_vector(), ws = w.shape().to_vector();
  const int64_t nsp = static_cast<int64_t>(xs.size()) - 2;
  const int64_t N = xs[0], C = xs[1], O = ws[0], I = ws[1];
  const V in_sp(xs.begin() + 2, xs.end()), k_sp(ws.begin() + 2, ws.end());
  const V xst = row_major(xs), wst = row_major(ws);
  const auto xv = x.to_vector<double>(), wv = w.to_vector<double>();
  V out_dims{N, O};
  out_dims.insert(out_dims.end(), out_sp.begin(), out_sp.end());
  std::vector<double> y(prod(out_dims), 0.0);
  for (int64_t f = 0; f < prod(out_dims); ++f) {
    const V oi = unflatten(f, out_dims);
    const int64_t n = oi[0], o = oi[1], g = o / (O / r.groups);
    double acc = 0;
    for (int64_t t = 0; t < prod(k_sp); ++t) {
      const V ki = unflatten(t, k_sp);
      int64_t xoff = n * xst[0], woff = o * wst[0];
      bool inside = true;
      for (int64_t d = 0; d < nsp; ++d) {
        const int64_t pos =
            oi[2 + d] * r.stride[d] - r.pad_before[d] + ki[d] * r.dil[d];
        inside = inside && pos >= 0 && pos < in_sp[d];
        xoff += pos * xst[2 + d];
        woff += ki[d] * wst[2 + d];
      }
      if (!inside) continue;
      for (int64_t i = 0; i < I; ++i)
        acc += xv[xoff + (g * I + i) * xst[1]] * wv[woff + i * wst[1]];
    }
    y[f] = acc;
  }
  (void)C;
  return tpf::from_vector(y, tpf::Shape(out_dims));
}

/** Reference pads and output extents, from TF's formulas. */
struct Plan {
  Ref ref;
  V out;
};
Plan plan(const V& in, const V& k, int64_t stride, int64_t dil,
          const std::string& mode, const V& pads, int64_t groups) {
  Plan p;
  p.ref.groups = groups;
  for (size_t d = 0; d < in.size(); ++d) {
    const int64_t ext = (k[d] - 1) * dil + 1;
    int64_t before = 0, after = 0;
    if (mode == "SAME") {
      const int64_t out = (in[d] + stride - 1) / stride;
      const int64_t total =
          std::max<int64_t>((out - 1) * stride + ext - in[d], 0);
      before = total / 2;
      after = total - before;
    } else if (mode == "EXPLICIT") {
      before = pads[2 * d];
      after = pads[2 * d + 1];
    }
    p.ref.stride.push_back(stride);
    p.ref.dil.push_back(dil);
    p.ref.pad_before.push_back(before);
    p.out.push_back((in[d] + before + after - ext) / stride + 1);
  }
  return p;
}

std::vector<int64_t> iota_perm(int64_t from, int64_t to) {
  std::vector<int64_t> p;
  for (int64_t i = from; i < to; ++i) p.push_back(i);
  return p;
}
/** NC... -> N...C and OI... -> ...IO, contiguous. */
tpf::Tensor act_last(const tpf::Tensor& x) {
  auto p = std::vector<int64_t>{0};
  for (int64_t i : iota_perm(2, x.rank())) p.push_back(i);
  p.push_back(1);
  return tpf::transpose(x, p).contiguous();
}
tpf::Tensor act_first(const tpf::Tensor& x) {
  auto p = std::vector<int64_t>{0, x.rank() - 1};
  for (int64_t i : iota_perm(1, x.rank() - 1)) p.push_back(i);
  return tpf::transpose(x, p);
}
tpf::Tensor filter_last(const tpf::Tensor& w) {
  auto p = iota_perm(2, w.rank());
  p.push_back(1);
  p.push_back(0);
  return tpf::transpose(w, p).contiguous();
}

using ConvFn = tpf::Tensor (*)(const tpf::Tensor&, const tpf::Tensor&,
                               const Opts&);

}  // namespace

TEST_CASE("conv1d/2d/3d match the reference for every option") {
  const std::vector<ConvFn> fns = {tpf::nn::conv1d, tpf::nn::conv2d,
                                   tpf::nn::conv3d};
  const std::vector<V> ins = {{9}, {7, 6}, {5, 6, 5}};
  const std::vector<V> ks = {{3}, {3, 2}, {2, 3, 2}};
  const char* last_formats[] = {"NWC", "NHWC", "NDHWC"};
  for (int64_t nsp = 1; nsp <= 3; ++nsp) {
    const V& in = ins[nsp - 1];
    const V& k = ks[nsp - 1];
    V xdims{2, 4}, pads;
    xdims.insert(xdims.end(), in.begin(), in.end());
    for (int64_t d = 0; d < nsp; ++d) {
      pads.push_back(d % 2);
      pads.push_back(1);
    }
    const auto x = uniform64(tpf::Shape(xdims));
    for (int64_t groups : {1, 2}) {
      V wdims{6, 4 / groups};
      wdims.insert(wdims.end(), k.begin(), k.end());
      const auto w = uniform64(tpf::Shape(wdims));
      for (int64_t stride : {1, 2})
        for (int64_t dil : {1, 2})
          for (std::string mode : {"SAME", "VALID", "EXPLICIT"})
            for (bool last : {false, true}) {
              CAPTURE(nsp);
              CAPTURE(groups);
              CAPTURE(stride);
              CAPTURE(dil);
              CAPTURE(mode);
              CAPTURE(last);
              const Plan p = plan(in, k, stride, dil, mode, pads, groups);
              const auto expected = reference_conv(x, w, p.ref, p.out);
              Opts o{.strides = {stride},
                     .padding = "VALID",
                     .dilations = V(nsp, dil),
                     .groups = groups,
                     .data_format = last ? last_formats[nsp - 1] : "NCHW"};
              if (mode == "EXPLICIT")
                o.padding = pads;
              else
                o.padding = mode;
              // Gradients: float32 (oneDNN backward passes) against float64
              // (direct loops), and the adjoint identity of a bilinear map:
              // <g, y> = <dx, x> = <dw, w>.
              const auto g = uniform64(expected.shape());
              Ts grads64;
              for (auto dt : {tpf::float64, tpf::float32}) {
                const auto xi = (last ? act_last(x) : x).cast(dt);
                const auto wi = (last ? filter_last(w) : w).cast(dt);
                tpf::GradientTape tape;
                tape.watch(xi);
                tape.watch(wi);
                auto y = fns[nsp - 1](xi, wi, o);
                const auto grads = tape.gradient(
                    y, {xi, wi}, {(last ? act_last(g) : g).cast(dt)});
                if (last) y = act_first(y);
                CHECK(y.dtype() == dt);
                if (dt == tpf::float64) {
                  CHECK_CLOSE(y, expected, 1e-12, 1e-12);
                  grads64 = grads;
                  const double gy = tpf::sum(g * y).item<double>();
                  CHECK(tpf::sum(grads[0] * xi).item<double>() ==
                        doctest::Approx(gy).epsilon(1e-10));
                  CHECK(tpf::sum(grads[1] * wi).item<double>() ==
                        doctest::Approx(gy).epsilon(1e-10));
                } else {
                  CHECK_CLOSE(y.cast(tpf::float64), expected, 1e-4, 1e-5);
                  CHECK_CLOSE(grads[0].cast(tpf::float64), grads64[0], 1e-4,
                              1e-5);
                  CHECK_CLOSE(grads[1].cast(tpf::float64), grads64[1], 1e-4,
                              1e-5);
                }
              }
            }
    }
  }
}

TEST_CASE("conv ops: forward, strided, float32 and gradcheck") {
  const auto x2 = uniform64({2, 2, 5, 4});
  const auto w2 = uniform64({3, 2, 3, 3});
  const Plan p2 = plan({5, 4}, {3, 3}, 2, 1, "SAME", {}, 1);
  const auto x1 = uniform64({2, 3, 7});
  const auto w1 = uniform64({2, 3, 3});
  const Plan p1 = plan({7}, {3}, 2, 1, "SAME", {}, 1);
  const auto x3 = uniform64({1, 2, 4, 3, 4});
  const auto w3 = uniform64({2, 2, 2, 2, 3});
  const Plan p3 =
      plan({4, 3, 4}, {2, 2, 3}, 1, 1, "EXPLICIT", {1, 0, 0, 1, 1, 1}, 1);
  const std::vector<OpCase> cases = {
      {"conv2d_same_stride2",
       [](const Ts& in) {
         return tpf::nn::conv2d(in[0], in[1],
                                {.strides = {2, 2}, .padding = "SAME"});
       },
       {x2, w2},
       reference_conv(x2, w2, p2.ref, p2.out)},
      {"conv2d_nhwc_groups_dilated",
       [](const Ts& in) {
         return tpf::nn::conv2d(in[0], in[1],
                                {.padding = {1, 0, 1, 1},
                                 .dilations = {2, 1},
                                 .groups = 2,
                                 .data_format = "NHWC"});
       },
       {uniform64({1, 5, 4, 4}), uniform64({2, 3, 2, 4})},
       tpf::Tensor()},
      {"conv1d_same_stride2",
       [](const Ts& in) {
         return tpf::nn::conv1d(in[0], in[1],
                                {.strides = {2}, .padding = "SAME"});
       },
       {x1, w1},
       reference_conv(x1, w1, p1.ref, p1.out)},
      {"conv3d_explicit",
       [](const Ts& in) {
         return tpf::nn::conv3d(in[0], in[1], {.padding = {1, 0, 0, 1, 1, 1}});
       },
       {x3, w3},
       reference_conv(x3, w3, p3.ref, p3.out)},
      {"conv2d_transpose_same_stride2",
       [](const Ts& in) {
         return tpf::nn::conv2d_transpose(in[0], in[1], {1, 2, 6, 5},
                                          {.strides = {2}, .padding = "SAME"});
       },
       {uniform64({1, 3, 3, 3}), uniform64({3, 2, 3, 3})},
       tpf::Tensor()},
      {"conv3d_transpose_valid_stride2",
       [](const Ts& in) {
         return tpf::nn::conv3d_transpose(in[0], in[1], {1, 2, 4, 5, 4},
                                          {.strides = {2}});
       },
       {uniform64({1, 2, 2, 2, 2}), uniform64({2, 2, 2, 2, 2})},
       tpf::Tensor()},
      {"depthwise_conv2d",
       [](const Ts& in) {
         return tpf::nn::depthwise_conv2d(in[0], in[1], {.padding = "SAME"});
       },
       {uniform64({1, 3, 5, 4}), uniform64({6, 1, 3, 3})},
       tpf::Tensor()},
      {"depthwise_conv2d_nhwc",
       [](const Ts& in) {
         return tpf::nn::depthwise_conv2d(
             in[0], in[1], {.strides = {2}, .data_format = "NHWC"});
       },
       {uniform64({1, 5, 5, 3}), uniform64({3, 3, 3, 2})},
       tpf::Tensor()},
      {"separable_conv2d",
       [](const Ts& in) {
         return tpf::nn::separable_conv2d(in[0], in[1], in[2],
                                          {.padding = "SAME"});
       },
       {uniform64({1, 2, 5, 5}), uniform64({4, 1, 3, 3}),
        uniform64({3, 4, 1, 1})},
       tpf::Tensor()},
  };
  for (const auto& c : cases) testing::run_op_case(c);
}

TEST_CASE("depthwise_conv2d is conv2d with groups = channels") {
  const auto x = uniform64({2, 3, 6, 5});
  const auto w = uniform64({6, 1, 3, 2});
  const Opts o{.strides = {1, 2}, .padding = "SAME"};
  Opts grouped = o;
  grouped.groups = 3;
  CHECK_CLOSE(tpf::nn::depthwise_conv2d(x, w, o),
              tpf::nn::conv2d(x, w, grouped), 1e-12, 1e-12);
  // NHWC takes TF's (KH, KW, C, M): output channel c * M + m.
  const auto tf_filter =
      tpf::transpose(tpf::reshape(w, {3, 2, 3, 2}), {2, 3, 0, 1}).contiguous();
  Opts nhwc = o;
  nhwc.data_format = "NHWC";
  CHECK_CLOSE(
      act_first(tpf::nn::depthwise_conv2d(act_last(x), tf_filter, nhwc)),
      tpf::nn::conv2d(x, w, grouped), 1e-12, 1e-12);
}

TEST_CASE("conv2d_transpose is the input gradient of conv2d") {
  for (bool last : {false, true})
    for (auto dt : {tpf::float64, tpf::float32}) {
      CAPTURE(last);
      const auto x = uniform64({2, 3, 7, 6}).cast(dt);
      const auto w = uniform64({4, 3, 3, 3}).cast(dt);
      const Opts o{.strides = {2, 2},
                   .padding = "SAME",
                   .dilations = {1, 2},
                   .data_format = last ? "NHWC" : "NCHW"};
      const auto xi = last ? act_last(x) : x;
      const auto wi = last ? filter_last(w) : w;
      tpf::GradientTape tape;
      tape.watch(xi);
      const auto y = tpf::nn::conv2d(xi, wi, o);
      const auto g = uniform64(y.shape()).cast(dt);
      const auto dx = tape.gradient(y, {xi}, {g})[0];
      const auto t = tpf::nn::conv2d_transpose(g, wi, xi.shape(), o);
      CHECK(t.shape() == xi.shape());
      CHECK_CLOSE(t.cast(tpf::float64), dx.cast(tpf::float64), 1e-5, 1e-5);
    }
}

TEST_CASE("conv with a bias is conv then bias_add, in every dtype and layout") {
  const Ts plain{uniform64({2, 4, 6, 5}), uniform64({6, 2, 3, 3}),
                 uniform64({6})};
  const Ts last{uniform64({2, 6, 5, 4}), uniform64({3, 3, 2, 6}),
                uniform64({6})};
  for (const auto& [format, in] :
       {std::pair<std::string, Ts>{"NCHW", plain}, {"NHWC", last}}) {
    const Opts o{.strides = {2, 1},
                 .padding = "SAME",
                 .groups = 2,
                 .data_format = format};
    for (const auto dtype : {tpf::float64, tpf::float32}) {
      CAPTURE(format);
      CAPTURE(tpf::dtype_name(dtype));
      Ts cast;
      for (const auto& t : in) cast.push_back(tpf::cast(t, dtype));
      const auto fused = tpf::nn::conv2d(cast[0], cast[1], cast[2], o);
      const auto apart = tpf::nn::bias_add(tpf::nn::conv2d(cast[0], cast[1], o),
                                           cast[2], format);
      CHECK_CLOSE(fused, apart, 1e-5, dtype == tpf::float32 ? 1e-5 : 1e-12);
    }
  }
  const std::vector<OpCase> cases = {
      {"conv2d_bias",
       [](const Ts& in) {
         return tpf::nn::conv2d(in[0], in[1], in[2], {.padding = "SAME"});
       },
       {uniform64({2, 2, 5, 4}), uniform64({3, 2, 3, 3}), uniform64({3})},
       tpf::Tensor()},
      {"conv1d_bias_nwc_stride2",
       [](const Ts& in) {
         return tpf::nn::conv1d(in[0], in[1], in[2],
                                {.strides = {2}, .data_format = "NWC"});
       },
       {uniform64({2, 7, 3}), uniform64({3, 3, 4}), uniform64({4})},
       tpf::Tensor()},
      {"conv3d_bias",
       [](const Ts& in) { return tpf::nn::conv3d(in[0], in[1], in[2]); },
       {uniform64({1, 2, 3, 4, 3}), uniform64({2, 2, 2, 2, 2}), uniform64({2})},
       tpf::Tensor()},
  };
  for (const auto& c : cases) testing::run_op_case(c);
  // Second order through the bias: d/db of a gradient of x.
  const auto fn = [](const Ts& in) {
    tpf::GradientTape inner;
    inner.watch(in[0]);
    const auto y = tpf::sum(
        tpf::tanh(tpf::nn::conv2d(in[0], in[1], in[2], {.padding = "SAME"})));
    return inner.gradient(y, {in[0]})[0];
  };
  const auto why = testing::gradcheck(
      fn, {uniform64({1, 2, 4, 4}), uniform64({3, 2, 3, 3}), uniform64({3})});
  CHECK_MESSAGE(why.empty(), why);
  expect_error<tpf::ShapeError>(
      [] {
        tpf::nn::conv2d(tpf::zeros({1, 2, 4, 4}), tpf::zeros({3, 2, 3, 3}),
                        tpf::zeros({2}));
      },
      "[conv2d] expected a bias of shape (3)");
}

TEST_CASE("recorded float32 convolutions reuse converted operands safely") {
  // 16 channels and more: oneDNN's blocked layouts, so the forward hands its
  // converted x and the input gradient its converted dy to the filter
  // gradient. A persistent tape's later gradients must see their own dy.
  const Ts in64{uniform64({2, 16, 7, 6}), uniform64({32, 16, 3, 3}),
                uniform64({32})};
  const Opts o{.padding = "SAME"};
  const auto g1 = uniform64({2, 32, 7, 6}), g2 = uniform64({2, 32, 7, 6});
  for (const bool input_too : {true, false}) {
    CAPTURE(input_too);
    const auto sources = [&](const Ts& in) {
      return input_too ? Ts{in[1], in[2], in[0]} : Ts{in[1], in[2]};
    };
    Ts in32;
    for (const auto& t : in64) in32.push_back(t.cast(tpf::float32));
    tpf::GradientTape persistent(true);
    for (const auto& t : sources(in32)) persistent.watch(t);
    const auto y32 = tpf::nn::conv2d(in32[0], in32[1], in32[2], o);
    for (const auto& g : {g1, g2, g1}) {
      tpf::GradientTape tape64;
      for (const auto& t : sources(in64)) tape64.watch(t);
      const auto y64 = tpf::nn::conv2d(in64[0], in64[1], in64[2], o);
      const Ts want = tape64.gradient(y64, sources(in64), {g});
      const Ts got =
          persistent.gradient(y32, sources(in32), {g.cast(tpf::float32)});
      for (size_t i = 0; i < want.size(); ++i)
        CHECK_CLOSE(got[i].cast(tpf::float64), want[i], 1e-4, 1e-4);
    }
  }
}

TEST_CASE("degenerate inputs: OpCase rows") {
  using testing::degenerate;
  using testing::kNan;
  using testing::zeros64;
  const std::vector<OpCase> cases = {
      degenerate(
          "conv2d_empty_batch",
          [](const Ts& in) { return tpf::nn::conv2d(in[0], in[1]); },
          {zeros64({0, 1, 3, 3}), uniform64({2, 1, 2, 2})},
          zeros64({0, 2, 2, 2})),
      degenerate(
          "conv2d_no_filters",
          [](const Ts& in) { return tpf::nn::conv2d(in[0], in[1]); },
          {uniform64({1, 1, 3, 3}), zeros64({0, 1, 2, 2})},
          zeros64({1, 0, 2, 2})),
      degenerate(
          "conv2d_no_input_channels",
          [](const Ts& in) { return tpf::nn::conv2d(in[0], in[1]); },
          {zeros64({1, 0, 3, 3}), zeros64({2, 0, 2, 2})},
          zeros64({1, 2, 2, 2})),
      degenerate(
          "conv2d_nan_pixel",
          [](const Ts& in) { return tpf::nn::conv2d(in[0], in[1]); },
          {tpf::reshape(tpf::tensor({kNan, 1.0, 2.0, 3.0}), {1, 1, 2, 2}),
           tpf::full({1, 1, 1, 1}, 2.0, tpf::float64)},
          tpf::reshape(tpf::tensor({kNan, 2.0, 4.0, 6.0}), {1, 1, 2, 2})),
  };
  for (const auto& c : cases) testing::run_op_case(c);
}
