// The forward and the filter gradient of one- and two-channel stride-1
// convolutions (src/cpu/conv_few_channels.cpp) against the float64 direct
// loops, on geometries that exercise their staging (asymmetric padding,
// dilation, rows that end inside a batch, planes that end inside one) and
// their register blocks (odd output-channel counts, filter rows longer than
// one block); which convolutions they take; that conv2d and its gradients
// reach them; and the one-channel convolutions left to oneDNN's GEMM kernel.
// White-box.
#include <cmath>
#include <limits>
#include <string>
#include <tuple>
#include <vector>

#include "cpu/conv_direct.hpp"
#include "cpu/conv_few_channels.hpp"
#include "support/check.hpp"

using testing::uniform64;
using V = std::vector<int64_t>;

namespace {

tpf::ConvAttrs attrs(const V& dilations, const V& pads) {
  tpf::ConvAttrs a;
  a.strides = {1, 1};
  a.dilations = {dilations[0], dilations[1]};
  a.pads_before = {pads[0], pads[2]};
  a.pads_after = {pads[1], pads[3]};
  return a;
}

struct Geometry {
  V x, w, dilations, pads;
};

const std::vector<Geometry>& geometries() {
  static const std::vector<Geometry> table = {
      {{4, 1, 28, 28}, {32, 1, 5, 5}, {1, 1}, {2, 2, 2, 2}},  // the sample's
      {{3, 2, 9, 13}, {5, 2, 3, 3}, {1, 1}, {1, 1, 1, 1}},
      {{2, 1, 7, 30}, {3, 1, 4, 4}, {1, 1}, {0, 0, 0, 0}},
      // 3x3 of one channel (its taps unrolled), plain and dilated.
      {{2, 1, 10, 9}, {6, 1, 3, 3}, {1, 1}, {1, 1, 1, 1}},
      {{1, 1, 12, 11}, {5, 1, 3, 3}, {2, 2}, {2, 2, 2, 2}},
      {{1, 2, 6, 5}, {1, 2, 2, 7}, {1, 1}, {0, 1, 3, 2}},    // kw 7: 6 + 1
      {{2, 1, 11, 17}, {4, 1, 3, 2}, {2, 3}, {1, 0, 0, 2}},  // dilated
      {{2, 1, 4, 3}, {2, 1, 1, 1}, {1, 1}, {0, 0, 0, 0}},    // 1x1, 3 wide
      {{1, 1, 3, 40}, {7, 1, 3, 13}, {1, 1}, {1, 1, 6, 6}},  // kw 13: 6+6+1
      // 5 channels over 2 threads: blocks of 2, 2 and 1.
      {{8, 1, 28, 28}, {5, 1, 5, 5}, {1, 1}, {2, 2, 2, 2}},
      // Filter columns that see only padding: whole staged planes are zero.
      {{1, 1, 4, 1}, {2, 1, 1, 11}, {1, 1}, {0, 0, 10, 0}},
      // Pads past the dilated filter's extent.
      {{2, 2, 5, 6}, {3, 2, 2, 3}, {2, 1}, {4, 5, 3, 4}},
      // Outputs as wide as the inputs, padded on one side only: the forward
      // stages each plane in one copy; dilated, shifted left by up to 4.
      {{1, 2, 5, 4}, {2, 2, 3, 3}, {1, 1}, {1, 1, 2, 0}},
      {{2, 1, 6, 9}, {3, 1, 3, 3}, {1, 2}, {1, 1, 0, 4}},
      // Filter-gradient rows (ow 14 rounded up to 16) as wide as the input's.
      {{2, 1, 5, 16}, {3, 1, 3, 3}, {1, 1}, {0, 0, 0, 0}},
  };
  return table;
}

/** kernel(threads) at 1 and 2 threads, restoring the thread count. */
template <class Kernel>
std::pair<tpf::Tensor, tpf::Tensor> at_one_and_two_threads(
    const Kernel& kernel) {
  const int saved = tpf::config::intra_op_threads();
  tpf::Tensor by_threads[2];
  for (int threads : {1, 2}) {
    tpf::config::set_intra_op_threads(threads);
    by_threads[threads - 1] = kernel();
  }
  tpf::config::set_intra_op_threads(saved);
  return {by_threads[0], by_threads[1]};
}

/** x (1, 1, 2, 8) of ones but for an inf at the end of its first row. */
tpf::Tensor ones_with_inf_ending_row_0() {
  auto x = tpf::full({1, 1, 2, 8}, 1.0, tpf::float32);
  x.data<float>()[7] = INFINITY;
  return x;
}

}  // namespace

TEST_CASE("few-channel forward equals the direct loops") {
  int row = 0;
  for (const Geometry& t : geometries()) {
    CAPTURE(t.x);
    CAPTURE(t.w);
    // Every pairing of bias and relu over the rows.
    const bool with_bias = row % 2 == 0, with_relu = row / 2 % 2 == 1;
    ++row;
    CAPTURE(with_relu);
    const tpf::ConvAttrs a = attrs(t.dilations, t.pads);
    const tpf::Shape ws(t.w);
    REQUIRE(
        tpf::cpu::few_channels_conv_forward_applies(a, tpf::Shape(t.x), ws));
    const auto x = uniform64(tpf::Shape(t.x)), w = uniform64(ws);
    const auto bias = uniform64({ws[0]});
    const tpf::Shape ys = a.output_shape(x.shape(), ws);
    auto expected = tpf::empty(ys, tpf::float64);
    tpf::cpu::conv_direct_forward(a, x, w, expected);
    if (with_bias) expected = expected + tpf::reshape(bias, {1, ws[0], 1, 1});
    if (with_relu) expected = tpf::relu(expected);
    // Each output is summed by one thread in the filter's order: bitwise the
    // same at 1 and 2 threads.
    const auto [one, two] = at_one_and_two_threads([&] {
      auto y = tpf::empty(ys, tpf::float32);
      tpf::cpu::few_channels_conv_forward(
          a, x.cast(tpf::float32), w.cast(tpf::float32),
          with_bias ? bias.cast(tpf::float32) : tpf::Tensor(), y, with_relu);
      return y;
    });
    CHECK_CLOSE(one.cast(tpf::float64), expected, 1e-4, 1e-4);
    CHECK(tpf::max(tpf::abs(one - two)).item<float>() == 0.0f);
  }
}

TEST_CASE("few-channel forward: an inf reaches only the windows that hold it") {
  // Staged rows lie back to back as y's do, so a batch of outputs spans rows:
  // the inf at the end of row 0 must not reach row 1's outputs.
  const tpf::ConvAttrs a = attrs({1, 1}, {0, 0, 0, 0});
  const auto x = ones_with_inf_ending_row_0();
  const auto w = tpf::full({1, 1, 1, 3}, 1.0, tpf::float32);
  auto y = tpf::empty({1, 1, 2, 6}, tpf::float32);
  tpf::cpu::few_channels_conv_forward(a, x, w, tpf::Tensor(), y, false);
  const float inf = std::numeric_limits<float>::infinity();
  CHECK(y.to_vector<float>() ==
        std::vector<float>{3, 3, 3, 3, 3, inf, 3, 3, 3, 3, 3, 3});
}

TEST_CASE("few-channel forward with relu: negatives to 0, NaN kept") {
  // Row 0 of x: 1 -1 NaN -4 2 2 2 3; a 1x2 filter of ones sums pairs.
  const tpf::ConvAttrs a = attrs({1, 1}, {0, 0, 0, 0});
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const auto x = tpf::from_vector(
      std::vector<float>{1, -1, nan, -4, 2, 2, 2, 3}, {1, 1, 1, 8});
  const auto w = tpf::full({1, 1, 1, 2}, 1.0, tpf::float32);
  auto y = tpf::empty({1, 1, 1, 7}, tpf::float32);
  tpf::cpu::few_channels_conv_forward(a, x, w, tpf::Tensor(), y, true);
  const std::vector<float> got = y.to_vector<float>();
  const std::vector<float> want{0, nan, nan, 0, 4, 4, 5};
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    CAPTURE(i);
    CHECK(std::isnan(got[i]) == std::isnan(want[i]));
    if (!std::isnan(want[i])) CHECK(got[i] == want[i]);
  }
}

TEST_CASE("few-channel filter gradient equals the direct loops") {
  for (const Geometry& t : geometries()) {
    CAPTURE(t.x);
    CAPTURE(t.w);
    const tpf::ConvAttrs a = attrs(t.dilations, t.pads);
    REQUIRE(tpf::cpu::few_channels_conv_applies(a, tpf::Shape(t.x),
                                                tpf::Shape(t.w)));
    const auto x = uniform64(tpf::Shape(t.x));
    const auto dy = uniform64(a.output_shape(x.shape(), tpf::Shape(t.w)));
    auto expected = tpf::empty(tpf::Shape(t.w), tpf::float64);
    tpf::cpu::conv_direct_grad_filter(a, x, dy, expected);
    // Each output channel is summed by one thread in a fixed order: bitwise
    // the same at 1 and 2 threads.
    const auto [one, two] = at_one_and_two_threads([&] {
      auto dw = tpf::empty(tpf::Shape(t.w), tpf::float32);
      tpf::cpu::few_channels_conv_grad_filter(a, x.cast(tpf::float32),
                                              dy.cast(tpf::float32), dw);
      return dw;
    });
    CHECK_CLOSE(one.cast(tpf::float64), expected, 1e-4, 1e-4);
    CHECK(tpf::max(tpf::abs(one - two)).item<float>() == 0.0f);
  }
}

TEST_CASE("few-channel filter gradient: an inf reaches only its taps") {
  // The last column of x's first row is in tap 2's windows only. The staged
  // rows run past the 6 outputs to a whole batch, as wide as x's rows (each
  // plane staged in one copy), and those columns meet dy's zero tail: an inf
  // staged there would make taps 0 and 1 NaN (0 * inf).
  const tpf::ConvAttrs a = attrs({1, 1}, {0, 0, 0, 0});
  const tpf::Shape w{1, 1, 1, 3};
  const auto x = ones_with_inf_ending_row_0();
  const auto dy = tpf::full({1, 1, 2, 6}, 1.0, tpf::float32);
  auto dw = tpf::empty(w, tpf::float32);
  tpf::cpu::few_channels_conv_grad_filter(a, x, dy, dw);
  CHECK(
      dw.to_vector<float>() ==
      std::vector<float>{12.0f, 12.0f, std::numeric_limits<float>::infinity()});
}

TEST_CASE("few-channel kernels: which convolutions they take") {
  const tpf::Shape x{2, 1, 8, 8}, w{4, 1, 3, 3};
  const tpf::ConvAttrs plain = attrs({1, 1}, {1, 1, 1, 1});
  CHECK(tpf::cpu::few_channels_conv_applies(plain, x, w));
  CHECK(tpf::cpu::few_channels_conv_applies(plain, {2, 2, 8, 8}, {4, 2, 3, 3}));
  CHECK_FALSE(
      tpf::cpu::few_channels_conv_applies(plain, {2, 3, 8, 8}, {4, 3, 3, 3}));
  tpf::ConvAttrs strided = plain;
  strided.strides = {1, 2};
  CHECK_FALSE(tpf::cpu::few_channels_conv_applies(strided, x, w));
  tpf::ConvAttrs grouped = plain;
  grouped.groups = 2;
  CHECK_FALSE(
      tpf::cpu::few_channels_conv_applies(grouped, {2, 2, 8, 8}, {4, 1, 3, 3}));
  tpf::ConvAttrs one_d;
  one_d.strides = one_d.dilations = {1};
  one_d.pads_before = one_d.pads_after = {0};
  CHECK_FALSE(tpf::cpu::few_channels_conv_applies(one_d, {2, 1, 8}, {4, 1, 3}));
  // Staged planes past 16 MiB, filters of more than 2^18 elements, or
  // dimensions that would overflow their size, stay with oneDNN.
  CHECK_FALSE(tpf::cpu::few_channels_conv_applies(plain, {1, 1, 4096, 4096},
                                                  {1, 1, 3, 3}));
  CHECK_FALSE(tpf::cpu::few_channels_conv_applies(plain, {1, 1, 64, 64},
                                                  {1024, 1, 17, 17}));
  // The forward keeps no accumulators per filter element: it takes those.
  CHECK(tpf::cpu::few_channels_conv_forward_applies(plain, {1, 1, 64, 64},
                                                    {1024, 1, 17, 17}));
  CHECK_FALSE(tpf::cpu::few_channels_conv_forward_applies(plain, {2, 3, 8, 8},
                                                          {4, 3, 3, 3}));
  CHECK_FALSE(tpf::cpu::few_channels_conv_forward_applies(strided, x, w));
  tpf::ConvAttrs huge_dilation = plain;
  huge_dilation.dilations = {1, int64_t{1} << 40};
  CHECK_FALSE(tpf::cpu::few_channels_conv_applies(huge_dilation, x, w));
  tpf::ConvAttrs huge_pad = plain;
  huge_pad.pads_after = {1, int64_t{1} << 40};
  CHECK_FALSE(tpf::cpu::few_channels_conv_applies(huge_pad, x, w));
}

TEST_CASE("conv2d's float32 filter gradient of a grayscale layer") {
  // The path a tape takes for a first layer (x unwatched) and for a middle
  // one (x watched), against float64, with NCHW/OIHW and NHWC/HWIO operands.
  const auto x = uniform64({3, 1, 12, 10});
  const auto w = uniform64({6, 1, 5, 5});
  for (bool watch_x : {false, true})
    for (const std::string format : {"NCHW", "NHWC"}) {
      CAPTURE(watch_x);
      CAPTURE(format);
      const bool last = format == "NHWC";
      tpf::Tensor grads[2];
      for (auto dt : {tpf::float64, tpf::float32}) {
        auto xi =
            (last ? tpf::transpose(x, {0, 2, 3, 1}).contiguous() : x).cast(dt);
        const auto wi =
            (last ? tpf::transpose(w, {2, 3, 1, 0}).contiguous() : w).cast(dt);
        tpf::GradientTape tape;
        if (watch_x) tape.watch(xi);
        tape.watch(wi);
        const auto y =
            tpf::nn::conv2d(xi, wi, {.padding = "SAME", .data_format = format});
        const auto loss = tpf::sum(y * y);
        grads[dt == tpf::float32] =
            tape.gradient(loss, {wi})[0].cast(tpf::float64);
      }
      CHECK_CLOSE(grads[1], grads[0], 1e-4, 1e-4);
    }
}

TEST_CASE("one-channel filter gradients the kernel leaves to oneDNN's GEMM") {
  // Strided 2-d, 1-d and 3-d convolutions of one input channel take oneDNN's
  // plain-layout GEMM kernel instead of its channel-padding blocked one.
  using ConvFn = tpf::Tensor (*)(const tpf::Tensor&, const tpf::Tensor&,
                                 const tpf::nn::ConvOptions&);
  const std::vector<std::tuple<ConvFn, V, V, int64_t>> cases = {
      {tpf::nn::conv2d, {3, 1, 13, 11}, {4, 1, 5, 3}, 2},
      {tpf::nn::conv1d, {2, 1, 17}, {5, 1, 4}, 1},
      {tpf::nn::conv3d, {2, 1, 6, 7, 5}, {3, 1, 3, 2, 3}, 2},
  };
  for (const auto& [conv, xdims, wdims, stride] : cases) {
    CAPTURE(xdims);
    const auto x = uniform64(tpf::Shape(xdims));
    const auto w = uniform64(tpf::Shape(wdims));
    tpf::Tensor grads[2];
    for (auto dt : {tpf::float64, tpf::float32}) {
      const auto xi = x.cast(dt), wi = w.cast(dt);
      tpf::GradientTape tape;
      tape.watch(wi);
      const auto y = conv(xi, wi, {.strides = {stride}, .padding = "SAME"});
      grads[dt == tpf::float32] =
          tape.gradient(tpf::sum(y * y), {wi})[0].cast(tpf::float64);
    }
    CHECK_CLOSE(grads[1], grads[0], 1e-4, 1e-4);
  }
}
