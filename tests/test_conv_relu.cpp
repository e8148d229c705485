// conv1d/2d/3d_relu (the ConvRelu op): relu of the convolution, rectified
// where each kernel writes y. OpCase rows (hand-computed, strided, float32,
// float64 gradcheck), equality with conv then relu on every CPU path (the
// few-channel kernel, oneDNN's primitives, the float64 loops) and layout,
// NaN kept as relu keeps it, second order, and the layers that take it.
#include <cmath>

#include "support/check.hpp"
#include "tapeflow/profiler.hpp"

using testing::expect_error;
using testing::kNan;
using testing::OpCase;
using testing::uniform64;
using Ts = std::vector<tpf::Tensor>;
using Opts = tpf::nn::ConvOptions;
namespace nn = tpf::nn;

TEST_CASE("conv_relu: forward, strided, float32 and gradcheck") {
  // x = [1 -2 3 -1] (one row), filter [2 1], bias -1: the sums
  // 2 - 2 - 1, -4 + 3 - 1, 6 - 1 - 1 are -1, -2, 4.
  const auto x = tpf::reshape(tpf::tensor({1.0, -2.0, 3.0, -1.0}), {1, 1, 4});
  const auto w = tpf::reshape(tpf::tensor({2.0, 1.0}), {1, 1, 2});
  const std::vector<OpCase> cases = {
      {"conv1d_relu_by_hand",
       [](const Ts& in) { return nn::conv1d_relu(in[0], in[1], in[2]); },
       {x, w, tpf::tensor({-1.0})},
       tpf::reshape(tpf::tensor({0.0, 0.0, 4.0}), {1, 1, 3})},
      {"conv2d_relu_bias_same",
       [](const Ts& in) {
         return nn::conv2d_relu(in[0], in[1], in[2], {.padding = "SAME"});
       },
       {uniform64({2, 2, 5, 4}), uniform64({3, 2, 3, 3}), uniform64({3})},
       tpf::Tensor()},
      {"conv2d_relu_wide_no_bias_stride2",
       [](const Ts& in) {
         return nn::conv2d_relu(in[0], in[1], tpf::Tensor(),
                                {.strides = {2, 1}, .padding = "SAME"});
       },
       {uniform64({2, 16, 5, 6}), uniform64({16, 16, 3, 3})},
       tpf::Tensor()},
      {"conv1d_relu_nwc",
       [](const Ts& in) {
         return nn::conv1d_relu(in[0], in[1], in[2], {.data_format = "NWC"});
       },
       {uniform64({2, 7, 3}), uniform64({3, 3, 4}), uniform64({4})},
       tpf::Tensor()},
      {"conv3d_relu_groups",
       [](const Ts& in) {
         return nn::conv3d_relu(in[0], in[1], in[2], {.groups = 2});
       },
       {uniform64({1, 4, 3, 4, 3}), uniform64({2, 2, 2, 2, 2}), uniform64({2})},
       tpf::Tensor()},
      testing::degenerate(
          "conv2d_relu_no_input_channels",  // y is relu(bias)
          [](const Ts& in) { return nn::conv2d_relu(in[0], in[1], in[2]); },
          {testing::zeros64({1, 0, 3, 3}), testing::zeros64({2, 0, 2, 2}),
           tpf::tensor({-1.0, 2.0})},
          tpf::reshape(tpf::tensor({0.0, 0.0, 0.0, 0.0, 2.0, 2.0, 2.0, 2.0}),
                       {1, 2, 2, 2})),
      testing::degenerate(
          "conv2d_relu_nan_pixel",
          [](const Ts& in) { return nn::conv2d_relu(in[0], in[1], in[2]); },
          {tpf::reshape(tpf::tensor({kNan, -1.0, 2.0, 3.0}), {1, 1, 2, 2}),
           tpf::full({1, 1, 1, 1}, 2.0, tpf::float64), tpf::tensor({-1.0})},
          tpf::reshape(tpf::tensor({kNan, 0.0, 3.0, 5.0}), {1, 1, 2, 2})),
  };
  for (const auto& c : cases) testing::run_op_case(c);
  expect_error<tpf::ShapeError>(
      [] {
        nn::conv2d_relu(tpf::zeros({1, 2, 4, 4}), tpf::zeros({3, 2, 3, 3}),
                        tpf::zeros({2}));
      },
      "[conv2d_relu] expected a bias of shape (3)");
  expect_error<tpf::ShapeError>(
      [] {
        nn::conv3d_relu(tpf::zeros({1, 2, 4, 4}), tpf::zeros({3, 2, 3, 3}),
                        tpf::Tensor());
      },
      "[conv3d_relu] expected x of rank 5");
}

namespace {

/** got == want within tol (relative and absolute), NaN where want has NaN. */
void check_same(const tpf::Tensor& got, const tpf::Tensor& want, double tol) {
  const auto g = got.cast(tpf::float64).to_vector<double>();
  const auto w = want.cast(tpf::float64).to_vector<double>();
  REQUIRE(g.size() == w.size());
  size_t wrong = 0;
  for (size_t i = 0; i < g.size(); ++i)
    wrong += std::isnan(w[i])
                 ? !std::isnan(g[i])
                 : !(std::abs(g[i] - w[i]) <= tol * (1 + std::abs(w[i])));
  CHECK(wrong == 0);
}

/** `x` with its element 5 set to NaN. */
tpf::Tensor with_nan(const tpf::Tensor& x) {
  auto v = x.to_vector<double>();
  v[5] = kNan;
  return tpf::from_vector(v, x.shape());
}

}  // namespace

TEST_CASE("conv_relu is relu of conv, values and gradients, on every path") {
  // 2 input channels at stride 1: the few-channel kernel (float32); 16 and
  // more: oneDNN's blocked primitives; float64: the direct loops. A NaN in
  // x stays NaN through relu, as the Relu op keeps it.
  struct Row {
    std::string name;
    tpf::Shape x, w;
    Opts o;
  };
  const Row rows[] = {
      {"few_channels", {2, 2, 9, 8}, {5, 2, 3, 3}, {.padding = "SAME"}},
      {"blocked", {2, 16, 7, 6}, {32, 16, 3, 3}, {.padding = "SAME"}},
      {"strided_dilated",
       {2, 3, 9, 9},
       {4, 3, 3, 3},
       {.strides = {2, 2}, .dilations = {1, 2}}},
  };
  for (const Row& r : rows)
    for (const auto dtype : {tpf::float32, tpf::float64}) {
      CAPTURE(r.name);
      CAPTURE(tpf::dtype_name(dtype));
      const auto x = with_nan(uniform64(r.x));
      const Ts in{x.cast(dtype), uniform64(r.w).cast(dtype),
                  uniform64({r.w[0]}).cast(dtype)};
      const auto seed =
          uniform64(nn::conv2d(in[0], in[1], in[2], r.o).shape()).cast(dtype);
      const auto run = [&](bool fused) {
        tpf::GradientTape tape;
        for (const auto& t : in) tape.watch(t);
        const auto y = fused ? nn::conv2d_relu(in[0], in[1], in[2], r.o)
                             : tpf::relu(nn::conv2d(in[0], in[1], in[2], r.o));
        Ts out = tape.gradient(y, in, {seed});
        out.insert(out.begin(), y);
        return out;
      };
      const Ts fused = run(true), apart = run(false);
      const double tol = dtype == tpf::float32 ? 1e-5 : 1e-12;
      for (size_t i = 0; i < fused.size(); ++i) {
        CAPTURE(i);
        check_same(fused[i], apart[i], tol);
      }
    }
}

TEST_CASE("conv_relu: second order, d/dw of a gradient of x") {
  const auto fn = [](const Ts& in) {
    tpf::GradientTape inner;
    inner.watch(in[0]);
    const auto y = tpf::sum(
        tpf::tanh(nn::conv2d_relu(in[0], in[1], in[2], {.padding = "SAME"})));
    return inner.gradient(y, {in[0]})[0];
  };
  const auto why = testing::gradcheck(
      fn, {uniform64({1, 2, 4, 4}), uniform64({3, 2, 3, 3}), uniform64({3})});
  CHECK_MESSAGE(why.empty(), why);
}

TEST_CASE("conv layers with activation relu fuse it, other activations not") {
  tpf::manual_seed(3);
  const auto x = tpf::random_uniform({2, 3, 8, 8}, -1.0, 1.0);
  for (const auto& [name, activation] :
       {std::pair<std::string, nn::Activation>{"nn::relu", nn::relu},
        {"tapeflow::relu",
         static_cast<tpf::Tensor (*)(const tpf::Tensor&)>(tpf::relu)},
        {"a lambda", [](const tpf::Tensor& t) { return tpf::relu(t); }}}) {
    CAPTURE(name);
    nn::Conv2D layer(4, {3, 3}, {.padding = "SAME", .activation = activation});
    tpf::profiler::start();
    const auto y = layer(x);
    const auto report = tpf::profiler::stop();
    bool fused = false;
    for (const auto& e : report.events()) fused |= e.name == "conv_relu";
    CHECK(fused == (name != std::string("a lambda")));
    const auto vars = layer.parameters();  // kernel, bias
    const auto want =
        tpf::relu(nn::conv2d(x, vars[0], vars[1], {.padding = "SAME"}));
    CHECK_CLOSE(y, want, 1e-6, 1e-6);
  }
}
