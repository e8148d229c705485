// config::set_float32_matmul_precision: float32 matmuls and the three passes
// of conv2d against float64, within what float32 or bfloat16 rounding of the
// inputs allows, and visibly less exact under `medium` where the CPU
// multiplies bfloat16 natively.
#include <bit>
#include <cmath>
#include <cstdint>
#include <string>

#include "support/check.hpp"

using testing::expect_error;
using testing::Fn;
using testing::uniform64;
using Ts = std::vector<tpf::Tensor>;
using tpf::config::Float32Precision;

namespace {

/** Sets a precision for one test and restores the previous one. */
class PrecisionScope {
 public:
  explicit PrecisionScope(Float32Precision p)
      : previous_(tpf::config::float32_matmul_precision()) {
    tpf::config::set_float32_matmul_precision(p);
  }
  ~PrecisionScope() { tpf::config::set_float32_matmul_precision(previous_); }

 private:
  Float32Precision previous_;
};

/**
 * Largest error of f on float32 copies of `inputs` against f in float64,
 * relative to the largest value of f on |inputs|: rounding every input by a
 * relative r moves each result by at most 2r times that bound.
 */
double relative_error(const Fn& f, const Ts& inputs) {
  Ts narrow, magnitude;
  for (const tpf::Tensor& t : inputs) {
    narrow.push_back(t.cast(tpf::float32));
    magnitude.push_back(tpf::abs(t));
  }
  const tpf::Tensor exact = f(inputs), got = f(narrow).cast(tpf::float64);
  return tpf::max(tpf::abs(got - exact)).item<double>() /
         tpf::max(tpf::abs(f(magnitude))).item<double>();
}

/** Whether oneDNN gets bfloat16 dot products from this CPU. */
bool native_bf16() {
  return __builtin_cpu_supports("avx512bf16");
}

/**
 * Finite x rounded to the nearest bfloat16, ties to even; subnormals become
 * zero, as AVX512-BF16's conversion instructions treat them.
 */
float round_to_bf16(float x) {
  if (std::fpclassify(x) == FP_SUBNORMAL) return std::copysign(0.0f, x);
  const uint32_t bits = std::bit_cast<uint32_t>(x);
  const uint32_t tie_to_even = 0x7fff + ((bits >> 16) & 1);
  return std::bit_cast<float>((bits + tie_to_even) & 0xffff0000u);
}

/** Checks f under highest and under medium precision. */
void check_precisions(const Fn& f, const Ts& inputs) {
  {
    PrecisionScope scope(Float32Precision::highest);
    CHECK(relative_error(f, inputs) < 1e-5);
  }
  PrecisionScope scope(Float32Precision::medium);
  const double err = relative_error(f, inputs);
  CHECK(err < 2 * 0x1p-8);  // two bfloat16 roundings of 8 bits each
  if (native_bf16()) CHECK(err > 1e-4);
}

const tpf::nn::ConvOptions kPad2{.padding = "SAME"};

tpf::Tensor conv_loss_grad(const Ts& in, int which) {
  tpf::GradientTape tape;
  tape.watch(in[0]);
  tape.watch(in[1]);
  const tpf::Tensor y = tpf::nn::conv2d(in[0], in[1], kPad2);
  return tape.gradient(tpf::sum(y * in[2]), {in[0], in[1]})[which];
}

}  // namespace

TEST_CASE("set_float32_matmul_precision takes PyTorch's names") {
  PrecisionScope scope(Float32Precision::highest);
  tpf::config::set_float32_matmul_precision("medium");
  CHECK(tpf::config::float32_matmul_precision() == Float32Precision::medium);
  tpf::config::set_float32_matmul_precision("high");
  CHECK(tpf::config::float32_matmul_precision() == Float32Precision::high);
  tpf::config::set_float32_matmul_precision("highest");
  CHECK(tpf::config::float32_matmul_precision() == Float32Precision::highest);
  expect_error<tpf::ValueError>(
      [] { tpf::config::set_float32_matmul_precision("low"); },
      "[set_float32_matmul_precision] expected \"highest\", \"high\" or "
      "\"medium\", got \"low\"");
}

TEST_CASE("float32 matmul under each precision") {
  SUBCASE("plain") {
    check_precisions([](const Ts& in) { return tpf::matmul(in[0], in[1]); },
                     {uniform64({300, 64}), uniform64({64, 260})});
  }
  SUBCASE("transposed operands, as in the gradients") {
    check_precisions(
        [](const Ts& in) {
          return tpf::matmul(tpf::transpose(in[0]), tpf::transpose(in[1]));
        },
        {uniform64({40, 300}), uniform64({256, 40})});
  }
  SUBCASE("batched with broadcasting") {
    check_precisions([](const Ts& in) { return tpf::matmul(in[0], in[1]); },
                     {uniform64({2, 260, 40}), uniform64({40, 256})});
  }
  // The gradient's products take the operands the forward converted; a
  // persistent tape's second gradient must still see its own output gradient.
  const auto gradient = [](int which) {
    return [which](const Ts& in) {
      tpf::GradientTape tape(true);
      tape.watch(in[0]);
      tape.watch(in[1]);
      const tpf::Tensor y = tpf::matmul(in[0], in[1]);
      tape.gradient(y, {in[0], in[1]}, {tpf::ones_like(y)});
      return tape.gradient(y, {in[0], in[1]}, {in[2]})[which];
    };
  };
  // Operands of equal size: only their addresses tell them apart.
  const Ts dense{uniform64({64, 300}), uniform64({300, 64}),
                 uniform64({64, 64})};
  SUBCASE("gradient of the left operand") {
    check_precisions(gradient(0), dense);
  }
  SUBCASE("gradient of the right operand") {
    check_precisions(gradient(1), dense);
  }
}

TEST_CASE("float32 conv2d passes under each precision") {
  const Ts in{uniform64({4, 16, 12, 12}), uniform64({32, 16, 5, 5}),
              uniform64({4, 32, 12, 12})};
  SUBCASE("forward") {
    check_precisions(
        [](const Ts& v) { return tpf::nn::conv2d(v[0], v[1], kPad2); }, in);
  }
  SUBCASE("gradient of the input") {
    check_precisions([](const Ts& v) { return conv_loss_grad(v, 0); }, in);
  }
  SUBCASE("gradient of the filter") {
    check_precisions([](const Ts& v) { return conv_loss_grad(v, 1); }, in);
  }
  SUBCASE("gradient of an input with few channels (plain layouts)") {
    check_precisions([](const Ts& v) { return conv_loss_grad(v, 0); },
                     {uniform64({4, 3, 12, 12}), uniform64({32, 3, 5, 5}),
                      uniform64({4, 32, 12, 12})});
  }
}

TEST_CASE("a precision change between a conv2d and its gradient") {
  // The forward's converted x is reused by the filter gradient only in the
  // precision the gradient runs in: bfloat16 kept from a `medium` forward
  // must not leak into a `highest` gradient, nor float32 into a `medium` one.
  const Ts in{uniform64({4, 16, 12, 12}), uniform64({32, 16, 5, 5}),
              uniform64({4, 32, 12, 12})};
  const auto filter_grad = [](Float32Precision forward, Float32Precision back) {
    return [=](const Ts& v) {
      tpf::GradientTape tape;
      tape.watch(v[1]);
      tpf::Tensor loss;
      {
        PrecisionScope scope(forward);
        loss = tpf::sum(tpf::nn::conv2d(v[0], v[1], kPad2) * v[2]);
      }
      PrecisionScope scope(back);
      return tape.gradient(loss, {v[1]})[0];
    };
  };
  CHECK(relative_error(
            filter_grad(Float32Precision::medium, Float32Precision::highest),
            in) < 1e-5);
  const double err = relative_error(
      filter_grad(Float32Precision::highest, Float32Precision::medium), in);
  CHECK(err < 2 * 0x1p-8);
  if (native_bf16()) CHECK(err > 1e-4);
}

TEST_CASE(
    "medium precision rounds matmul operands to the nearest bfloat16, "
    "ties to even") {
  if (!native_bf16()) return;  // medium computes as highest there
  PrecisionScope scope(Float32Precision::medium);
  // a @ I is a itself rounded: every product is exact and sums with zeros.
  // Halfway cases go to the even neighbour; odd extents exercise the tails,
  // the large one the threaded split.
  const float step = 0x1p-7f;  // between bfloat16 neighbours near 1
  std::vector<float> specials{1.0f + step / 2,  1.0f + 3 * step / 2,
                              -1.0f - step / 2, 1.0f + step / 2 + 0x1p-20f,
                              0x1p-130f,        3.0e38f};
  for (const tpf::Shape& shape : {tpf::Shape{5, 37}, tpf::Shape{300, 260}}) {
    std::vector<float> values(shape.numel());
    for (size_t i = 0; i < values.size(); ++i)
      values[i] = i < specials.size()
                      ? specials[i]
                      : std::ldexp(std::sin(0.37f * i), int(i % 9) - 4);
    const tpf::Tensor a = tpf::from_vector(values, shape);
    const tpf::Tensor got =
        tpf::matmul(a, tpf::eye(shape[1], shape[1], tpf::float32));
    const float* out = got.data<float>();
    int64_t wrong = 0;
    for (size_t i = 0; i < values.size(); ++i) {
      const float want = round_to_bf16(values[i]);
      if (std::bit_cast<uint32_t>(out[i]) != std::bit_cast<uint32_t>(want))
        ++wrong;
    }
    CHECK_MESSAGE(wrong == 0, "elements not rounded as expected: " << wrong);
    CHECK(out[0] == 1.0f);             // tie, down to even
    CHECK(out[1] == 1.0f + 2 * step);  // tie, up to even
    CHECK(out[2] == -1.0f);            // tie, down in magnitude
  }
}
