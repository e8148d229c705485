// tf.nn.convolution and tf.nn.pool: the rank taken from the input, against
// the rank-specific ops; dilated pooling against a direct reference and by
// hand; float64 gradcheck; errors naming expected and actual values.
#include <algorithm>
#include <limits>
#include <string>

#include "support/check.hpp"

using testing::OpCase;
using testing::uniform64;
using Ts = std::vector<tpf::Tensor>;
namespace nn = tpf::nn;

namespace {

/** f() throws E whose message contains every one of `parts`. */
template <class E, class F>
void expect_message(F&& f, const std::vector<std::string>& parts) {
  bool thrown = false;
  try {
    f();
  } catch (const E& e) {
    thrown = true;
    for (const auto& p : parts)
      CHECK_MESSAGE(std::string(e.what()).find(p) != std::string::npos,
                    (std::string(e.what()) + " lacks " + p));
  }
  CHECK_MESSAGE(thrown,
                (std::string("expected an error naming ") + parts.front()));
}

/**
 * Stride-1 pooling of channels-first float64 x with windows dilated by
 * `rate`; SAME pads with zeros the windows see (TensorFlow's dilated pool).
 */
tpf::Tensor ref_dilated_pool(const tpf::Tensor& x, std::vector<int64_t> k,
                             std::vector<int64_t> rate, bool same, bool max) {
  const auto& s = x.shape();
  const int nd = static_cast<int>(s.size()) - 2;
  int64_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1}, kk[3] = {1, 1, 1},
          r[3] = {1, 1, 1}, lo[3] = {0, 0, 0};
  for (int i = 0; i < nd; ++i) {
    const int a = 3 - nd + i;
    in[a] = s[2 + i], kk[a] = k[i], r[a] = rate[i];
    const int64_t extent = (k[i] - 1) * rate[i] + 1;
    out[a] = same ? in[a] : in[a] - extent + 1;
    lo[a] = same ? (extent - 1) / 2 : 0;
  }
  const auto v = x.to_vector<double>();
  std::vector<double> y;
  for (int64_t p = 0; p < s[0] * s[1]; ++p)
    for (int64_t a = 0; a < out[0]; ++a)
      for (int64_t b = 0; b < out[1]; ++b)
        for (int64_t c = 0; c < out[2]; ++c) {
          double acc = max ? -std::numeric_limits<double>::infinity() : 0.0;
          for (int64_t i = 0; i < kk[0]; ++i)
            for (int64_t j = 0; j < kk[1]; ++j)
              for (int64_t l = 0; l < kk[2]; ++l) {
                const int64_t d = a + i * r[0] - lo[0],
                              h = b + j * r[1] - lo[1],
                              w = c + l * r[2] - lo[2];
                const bool inside = d >= 0 && h >= 0 && w >= 0 && d < in[0] &&
                                    h < in[1] && w < in[2];
                const double e =
                    inside ? v[((p * in[0] + d) * in[1] + h) * in[2] + w] : 0.0;
                acc = max ? std::max(acc, e) : acc + e;
              }
          y.push_back(max ? acc : acc / (kk[0] * kk[1] * kk[2]));
        }
  std::vector<int64_t> shape{s[0], s[1]};
  for (int i = 0; i < nd; ++i) shape.push_back(out[3 - nd + i]);
  return tpf::from_vector(y, tpf::Shape(shape));
}

const char* kFirst[] = {"NCW", "NCHW", "NCDHW"};
const char* kLast[] = {"NWC", "NHWC", "NDHWC"};

std::vector<int64_t> to_last(int nd) {
  std::vector<int64_t> p{0};
  for (int i = 2; i < nd + 2; ++i) p.push_back(i);
  p.push_back(1);
  return p;
}

}  // namespace

TEST_CASE("convolution picks conv1d/2d/3d from the input's rank") {
  using ConvFn = tpf::Tensor (*)(const tpf::Tensor&, const tpf::Tensor&,
                                 const nn::ConvOptions&);
  const ConvFn convs[] = {nn::conv1d, nn::conv2d, nn::conv3d};
  const tpf::Shape xs[] = {{2, 4, 9}, {2, 4, 7, 6}, {1, 4, 5, 6, 5}};
  for (int nd = 1; nd <= 3; ++nd)
    for (bool last : {false, true})
      for (int64_t filter_in : {4, 2}) {  // 2: two groups
        CAPTURE(nd);
        CAPTURE(last);
        CAPTURE(filter_in);
        tpf::Shape w_shape{6, filter_in};
        for (int i = 0; i < nd; ++i) w_shape.push_back(2);
        auto x = uniform64(xs[nd - 1]);
        auto w = uniform64(w_shape);
        if (last) {
          x = tpf::transpose(x, to_last(nd));
          std::vector<int64_t> perm;  // OI... -> ...IO
          for (int i = 0; i < nd; ++i) perm.push_back(i + 2);
          perm.push_back(1);
          perm.push_back(0);
          w = tpf::transpose(w, perm);
        }
        const std::string format = last ? kLast[nd - 1] : kFirst[nd - 1];
        const auto y = nn::convolution(x, w,
                                       {.padding = "SAME",
                                        .strides = {2},
                                        .dilation_rate = {},
                                        .data_format = format});
        const auto expect = convs[nd - 1](x, w,
                                          {.strides = {2},
                                           .padding = "SAME",
                                           .groups = 4 / filter_in,
                                           .data_format = format});
        CHECK(y.shape() == expect.shape());
        CHECK_CLOSE(y, expect, 1e-14, 1e-14);
      }
  // Dilation reaches the convolution.
  const auto x = uniform64({1, 2, 9, 9}), w = uniform64({3, 2, 3, 3});
  CHECK_CLOSE(nn::convolution(x, w, {.dilation_rate = {2, 1}}),
              nn::conv2d(x, w, {.dilations = {2, 1}}), 1e-14, 1e-14);
  CHECK(nn::convolution(x, w, {.dilation_rate = {2, 1}}).shape() ==
        tpf::Shape{1, 3, 5, 7});
}

TEST_CASE("convolution errors name expected and actual values") {
  const auto x = tpf::ones({1, 4, 5, 5});
  expect_message<tpf::ShapeError>(
      [&] {
        nn::convolution(tpf::ones({4, 5}), tpf::ones({3, 4}));
      },
      {"[convolution]", "rank 3, 4 or 5", "(4, 5)"});
  expect_message<tpf::ShapeError>(
      [&] {
        nn::convolution(x, tpf::ones({3, 4, 2}));
      },
      {"[convolution]", "rank 4", "(3, 4, 2)"});
  expect_message<tpf::ShapeError>(
      [&] {
        nn::convolution(x, tpf::ones({3, 3, 2, 2}));
      },
      {"[convolution]", "dividing the 4 input channels", "got 3"});
  expect_message<tpf::ValueError>(
      [&] {
        nn::convolution(x, tpf::ones({3, 4, 2, 2}), {.data_format = "NWC"});
      },
      {"[convolution]", "NWC"});
  expect_message<tpf::ValueError>(
      [&] {
        nn::convolution(x, tpf::ones({3, 4, 2, 2}), {.strides = {1, 1, 1}});
      },
      {"[convolution]", "strides"});
}

TEST_CASE("pool without dilation is the rank's max or average pooling") {
  const tpf::Shape xs[] = {{2, 3, 9}, {2, 3, 7, 6}, {1, 2, 5, 6, 5}};
  using PoolFn = tpf::Tensor (*)(const tpf::Tensor&, const nn::PoolOptions&);
  const PoolFn maxes[] = {nn::max_pool1d, nn::max_pool2d, nn::max_pool3d};
  const PoolFn avgs[] = {nn::avg_pool1d, nn::avg_pool2d, nn::avg_pool3d};
  for (int nd = 1; nd <= 3; ++nd)
    for (const char* type : {"MAX", "AVG"})
      for (const char* padding : {"VALID", "SAME"})
        for (const std::vector<int64_t>& strides :
             {std::vector<int64_t>{}, std::vector<int64_t>{2}}) {
          CAPTURE(nd);
          CAPTURE(type);
          CAPTURE(padding);
          CAPTURE(strides.size());
          const auto x = uniform64(xs[nd - 1]);
          const auto y = nn::pool(x, {.window_shape = {2},
                                      .pooling_type = type,
                                      .strides = strides,
                                      .padding = padding});
          // pool's strides default to 1, the pooling ops' to the window.
          const nn::PoolOptions o{
              .ksize = {2},
              .strides = strides.empty() ? std::vector<int64_t>{1} : strides,
              .padding = padding};
          const auto expect =
              (std::string(type) == "MAX" ? maxes : avgs)[nd - 1](x, o);
          CHECK_CLOSE(y, expect, 1e-15, 1e-15);
        }
}

TEST_CASE("dilated pool by hand: TensorFlow's zero padding under SAME") {
  const auto x =
      tpf::reshape(tpf::tensor({1.0, 5.0, 2.0, 4.0, 3.0}), {1, 1, 5});
  auto pool = [&](const tpf::Tensor& in, const char* type,
                  const char* padding) {
    return tpf::reshape(nn::pool(in, {.window_shape = {2},
                                      .pooling_type = type,
                                      .padding = padding,
                                      .dilation_rate = {2}}),
                        {-1});
  };

  // Windows {i, i + 2}.
  CHECK_CLOSE(pool(x, "MAX", "VALID"), tpf::tensor({2.0, 5.0, 3.0}));
  CHECK_CLOSE(pool(x, "AVG", "VALID"), tpf::tensor({1.5, 4.5, 2.5}));
  // Extent 3: one zero on each side, [0, 1, 5, 2, 4, 3, 0].
  CHECK_CLOSE(pool(x, "MAX", "SAME"), tpf::tensor({5.0, 2.0, 5.0, 3.0, 4.0}));
  CHECK_CLOSE(pool(x, "AVG", "SAME"), tpf::tensor({2.5, 1.5, 4.5, 2.5, 2.0}));
  const auto neg = tpf::reshape(tpf::tensor({-1.0, -2.0, -3.0}), {1, 1, 3});
  CHECK_CLOSE(pool(neg, "MAX", "SAME"), tpf::tensor({0.0, -1.0, 0.0}));
}

TEST_CASE("dilated max pool's gradient goes to a window's first maximum") {
  // One window over the corners (0, 0), (0, 2), (2, 0), (2, 2); ties go to
  // the first in row-major order, as max_pool2d's gradient sends them (TF).
  const auto grad_of = [](const tpf::Tensor& x) {
    tpf::GradientTape tape;
    tape.watch(x);
    const auto y = nn::pool(x, {.window_shape = {2, 2},
                                .pooling_type = "MAX",
                                .dilation_rate = {2, 2}});
    return tape.gradient(tpf::sum(y), {x})[0];
  };
  const auto corners = tpf::reshape(
      tpf::tensor<double>({{0, 9, 5}, {9, 9, 9}, {5, 9, 0}}), {1, 1, 3, 3});
  CHECK_CLOSE(
      grad_of(corners),
      tpf::reshape(tpf::tensor<double>({{0, 0, 1}, {0, 0, 0}, {0, 0, 0}}),
                   {1, 1, 3, 3}));
  CHECK_CLOSE(
      grad_of(tpf::ones({1, 1, 3, 3}, tpf::float64)),
      tpf::reshape(tpf::tensor<double>({{1, 0, 0}, {0, 0, 0}, {0, 0, 0}}),
                   {1, 1, 3, 3}));
  const auto plain =
      tpf::reshape(tpf::tensor<double>({{0, 5}, {5, 0}}), {1, 1, 2, 2});
  tpf::GradientTape tape;
  tape.watch(plain);
  const auto y = nn::max_pool2d(plain, {.ksize = {2, 2}});
  CHECK_CLOSE(
      tape.gradient(tpf::sum(y), {plain})[0],
      tpf::reshape(tpf::tensor<double>({{0, 1}, {0, 0}}), {1, 1, 2, 2}));
}

TEST_CASE("dilated pool matches a direct reference in every layout") {
  const tpf::Shape xs[] = {{2, 3, 11}, {2, 3, 9, 8}, {1, 2, 7, 6, 7}};
  const std::vector<int64_t> ks[] = {{3}, {2, 3}, {2, 2, 3}};
  const std::vector<int64_t> rates[] = {{2}, {3, 2}, {2, 1, 2}};
  for (int nd = 1; nd <= 3; ++nd)
    for (bool max : {true, false})
      for (bool same : {false, true})
        for (bool last : {false, true}) {
          CAPTURE(nd);
          CAPTURE(max);
          CAPTURE(same);
          CAPTURE(last);
          const auto x = uniform64(xs[nd - 1]);
          const auto expect =
              ref_dilated_pool(x, ks[nd - 1], rates[nd - 1], same, max);
          const nn::PoolingOptions o{
              .window_shape = ks[nd - 1],
              .pooling_type = max ? "MAX" : "AVG",
              .padding = same ? "SAME" : "VALID",
              .dilation_rate = rates[nd - 1],
              .data_format = last ? kLast[nd - 1] : kFirst[nd - 1]};
          const auto in = last ? tpf::transpose(x, to_last(nd)) : x;
          const auto y = nn::pool(in, o);
          CHECK_CLOSE(y, last ? tpf::transpose(expect, to_last(nd)) : expect,
                      1e-12, 1e-12);
          const auto y32 = nn::pool(in.cast(tpf::float32), o);
          CHECK(y32.dtype() == tpf::float32);
          CHECK_CLOSE(y32.cast(tpf::float64), y, 1e-5, 1e-6);
        }
}

TEST_CASE("convolution and pool gradients match float64 finite differences") {
  const auto x2 = uniform64({2, 3, 7, 6}), x1 = uniform64({2, 2, 9});
  const auto w2 = uniform64({4, 3, 2, 2});
  const std::vector<OpCase> cases = {
      {"convolution_2d_dilated",
       [](const Ts& in) {
         return nn::convolution(in[0], in[1],
                                {.padding = "SAME", .dilation_rate = {2}});
       },
       {x2, w2},
       nn::conv2d(x2, w2, {.padding = "SAME", .dilations = {2}})},
      {"pool_max_dilated_same",
       [](const Ts& in) {
         return nn::pool(in[0], {.window_shape = {2, 2},
                                 .pooling_type = "MAX",
                                 .padding = "SAME",
                                 .dilation_rate = {2, 3}});
       },
       {x2},
       ref_dilated_pool(x2, {2, 2}, {2, 3}, true, true)},
      {"pool_avg_dilated_valid",
       [](const Ts& in) {
         return nn::pool(in[0], {.window_shape = {3},
                                 .pooling_type = "AVG",
                                 .dilation_rate = {2}});
       },
       {x1},
       ref_dilated_pool(x1, {3}, {2}, false, false)},
      {"pool_max_strided",
       [](const Ts& in) {
         return nn::pool(in[0], {.window_shape = {3, 2},
                                 .pooling_type = "MAX",
                                 .strides = {2, 1}});
       },
       {x2},
       nn::max_pool2d(x2, {.ksize = {3, 2}, .strides = {2, 1}})},
  };
  for (const auto& c : cases) testing::run_op_case(c);
}

TEST_CASE("pool errors name expected and actual values") {
  const auto x = tpf::ones({1, 2, 6, 6});
  expect_message<tpf::ValueError>(
      [&] { nn::pool(x, {.window_shape = {2}, .pooling_type = "max"}); },
      {"[pool]", "\"MAX\" or \"AVG\"", "\"max\""});
  expect_message<tpf::ValueError>(
      [&] { nn::pool(x, {.window_shape = {2}, .pooling_type = ""}); },
      {"[pool]", "got \"\""});
  expect_message<tpf::ShapeError>(
      [&] {
        nn::pool(tpf::ones({6, 6}),
                 {.window_shape = {2}, .pooling_type = "MAX"});
      },
      {"[pool]", "rank 3, 4 or 5", "(6, 6)"});
  expect_message<tpf::ValueError>(
      [&] {
        nn::pool(x, {.window_shape = {2, 2, 2}, .pooling_type = "AVG"});
      },
      {"[pool]", "window_shape of 1 or 2 values", "[2, 2, 2]"});
  expect_message<tpf::ValueError>(
      [&] {
        nn::pool(x, {.window_shape = {2},
                     .pooling_type = "MAX",
                     .strides = {2},
                     .dilation_rate = {2}});
      },
      {"[pool]", "strides of 1", "(2, 2)"});
  expect_message<tpf::ShapeError>(
      [&] {
        nn::pool(
            x,
            {.window_shape = {4}, .pooling_type = "MAX", .dilation_rate = {2}});
      },
      {"[pool]", "extent 7"});
  expect_message<tpf::ValueError>(
      [&] {
        nn::pool(x, {.window_shape = {2},
                     .pooling_type = "MAX",
                     .padding = "same",
                     .dilation_rate = {2}});
      },
      {"[pool]", "\"same\""});
}
