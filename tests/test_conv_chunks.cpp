// float32 convolutions whose activations outgrow the cache run a few images
// at a time (cpu/onednn/conv_chunks.cpp): the forward, input gradient and
// filter gradient (summed over the chunks) equal the float64 direct kernels,
// in float32 and under bfloat16 products, with chunks of one image and of
// two with a shorter last one, also through conv2d_relu. White-box where it
// asks which chunks a shape gets and what a pass in chunks leaves for the
// filter gradient.
#include <cstring>

#include "cpu/onednn/common.hpp"
#include "cpu/onednn/conv_chunks.hpp"
#include "cpu/onednn/precision.hpp"
#include "support/check.hpp"
#include "support/fixed_threads.hpp"

using testing::uniform64;
using Ts = std::vector<tpf::Tensor>;
namespace onednn = tpf::cpu::onednn;

namespace {

struct ChunkCase {
  tpf::Shape x, w;
  int64_t stride, groups;
  // What conv_chunks.cpp chooses for the forward, input gradient and filter
  // gradient, with float32 and with bfloat16 operands.
  int64_t per_f32[3], per_bf16[3];
};

/** SAME padding of a k x k filter at stride `s` on extent `in`. */
tpf::Shape same_pads(int64_t in, int64_t k, int64_t s) {
  const int64_t out = (in + s - 1) / s;
  const int64_t total = std::max<int64_t>((out - 1) * s + k - in, 0);
  return {total / 2, total - total / 2, total / 2, total - total / 2};
}

tpf::ConvAttrs attrs_of(const ChunkCase& c) {
  tpf::ConvAttrs a;
  a.strides = {c.stride, c.stride};
  a.dilations = {1, 1};
  const tpf::Shape p = same_pads(c.x[2], c.w[2], c.stride);
  a.pads_before = {p[0], p[2]};
  a.pads_after = {p[1], p[3]};
  a.groups = c.groups;
  return a;
}

tpf::Shape out_shape(const ChunkCase& c) {
  return {c.x[0], c.w[0], (c.x[2] + c.stride - 1) / c.stride,
          (c.x[3] + c.stride - 1) / c.stride};
}

}  // namespace

// 23 images of 16 x 64 x 64 (11.5 MiB blocked in and out in float32): two
// images a chunk and one last in the forward and the input gradient, also
// depthwise; the filter gradient whole (which the forward's conversions let
// it take), and with bfloat16 activations (9 MiB) all whole. 35 such images
// (17.5 MiB): the filter gradient in chunks of two too (and one last), and
// under bfloat16 (14 MiB) all whole. 6 images of 16 x 224 x 224 at
// stride 2 into 32 channels: one image a chunk, but the filter gradient
// under bfloat16 (14 MiB) whole. The counts assume oneDNN's blocked layouts
// (8 or 16 channels a block, so 16 and 32 channels take no padding), which
// its AVX2 and AVX-512 kernels choose.
const ChunkCase kCases[] = {
    {{23, 16, 64, 64}, {16, 16, 3, 3}, 1, 1, {2, 2, 23}, {23, 23, 23}},
    {{35, 16, 64, 64}, {16, 16, 3, 3}, 1, 1, {2, 2, 2}, {35, 35, 35}},
    {{6, 16, 224, 224}, {32, 16, 3, 3}, 2, 1, {1, 1, 1}, {1, 1, 6}},
    {{23, 16, 64, 64}, {16, 1, 3, 3}, 1, 16, {2, 2, 23}, {23, 23, 23}}};

/** True where precision `medium` multiplies bfloat16 on this CPU. */
bool native_bf16() {
  tpf::config::set_float32_matmul_precision(
      tpf::config::Float32Precision::medium);
  const bool native = tpf::cpu::multiply_in_bf16();
  tpf::config::set_float32_matmul_precision(
      tpf::config::Float32Precision::highest);
  return native;
}

TEST_CASE("large activations: the chunks each pass takes") {
  const int threads = tpf::config::intra_op_threads();
  onednn::sync_threads(threads);
  using P = onednn::ConvPass;
  for (const bool bf16 : {false, true}) {
    if (bf16 && !native_bf16()) continue;
    for (const ChunkCase& c : kCases) {
      CAPTURE(c.x);
      CAPTURE(bf16);
      const tpf::ConvAttrs a = attrs_of(c);
      const tpf::Shape y = out_shape(c);
      for (P pass : {P::forward, P::grad_input, P::grad_filter}) {
        CAPTURE(static_cast<int>(pass));
        const bool bias = pass == P::forward;
        onednn::ConvPrimitive& whole =
            onednn::conv_primitive(pass, a, c.x, c.w, y, bias, bf16, threads);
        CHECK(onednn::images_per_chunk(whole, pass, c.x[0], threads) ==
              (bf16 ? c.per_bf16 : c.per_f32)[static_cast<int>(pass)]);
      }
    }
  }
}

/** What a run of a chunk case computes. */
enum class Out { conv, conv_relu, relu_of_conv };

TEST_CASE("large activations in chunks: forward and gradients as float64") {
  using tpf::config::Float32Precision;
  const char* names[] = {"y", "dx", "dw", "db"};
  for (const ChunkCase& c : kCases) {
    CAPTURE(c.x);
    const Ts in64{uniform64(c.x), uniform64(c.w), uniform64({c.w[0]})};
    const tpf::Tensor g = uniform64(out_shape(c));
    const tpf::nn::ConvOptions o{
        .strides = {c.stride, c.stride}, .padding = "SAME", .groups = c.groups};
    const auto run = [&](const Ts& in, const tpf::Tensor& seed, Out what) {
      tpf::GradientTape tape;
      for (const auto& t : in) tape.watch(t);
      const tpf::Tensor y =
          what == Out::conv_relu ? tpf::nn::conv2d_relu(in[0], in[1], in[2], o)
          : what == Out::relu_of_conv
              ? tpf::relu(tpf::nn::conv2d(in[0], in[1], in[2], o))
              : tpf::nn::conv2d(in[0], in[1], in[2], o);
      Ts out = tape.gradient(y, in, {seed});
      out.insert(out.begin(), y);
      return out;
    };
    const Ts want = run(in64, g, Out::conv);
    Ts in32;
    for (const auto& t : in64) in32.push_back(t.cast(tpf::float32));
    for (const auto& [precision, threads] :
         {std::pair{Float32Precision::highest, 1},
          {Float32Precision::highest, 2},
          {Float32Precision::medium, 2}}) {
      CAPTURE(threads);
      tpf::config::set_float32_matmul_precision(precision);
      // The same threads for the three runs: the same chunks, summed alike.
      const testing::FixedThreads fixed(threads);
      const tpf::Tensor g32 = g.cast(tpf::float32);
      const Ts got = run(in32, g32, Out::conv);
      // conv2d_relu rectifies each chunk of y as it comes out: exactly what
      // relu after the same chunks gives (a float64 reference would put
      // some of relu's kinks elsewhere).
      const Ts fused = run(in32, g32, Out::conv_relu),
               apart = run(in32, g32, Out::relu_of_conv);
      tpf::config::set_float32_matmul_precision(Float32Precision::highest);
      // bfloat16 keeps 8 bits: judged against each output's scale.
      const double rtol =
          precision == Float32Precision::medium && native_bf16() ? 2e-2 : 1e-4;
      for (size_t i = 0; i < want.size(); ++i) {
        CAPTURE(names[i]);
        CAPTURE(rtol);
        const double scale = tpf::max(tpf::abs(want[i])).item<double>();
        CHECK_CLOSE(got[i].cast(tpf::float64), want[i], rtol, rtol * scale);
        CHECK(tpf::max(tpf::abs(fused[i] - apart[i])).item<float>() == 0.0f);
      }
    }
  }
}

/** `t` reordered whole from `plain` into `layout`, as a whole pass does. */
std::vector<char> reordered(const tpf::Tensor& t, const dnnl::memory& plain,
                            const dnnl::memory::desc& layout) {
  std::vector<char> bytes(layout.get_size());
  dnnl::memory from(plain.get_desc(), onednn::engine(), t.raw_data()),
      to(layout, onednn::engine(), bytes.data());
  dnnl::reorder(from, to).execute(onednn::stream(), from, to);
  onednn::stream().wait();
  return bytes;
}

TEST_CASE("a pass in chunks converts its input for the whole batch") {
  using P = onednn::ConvPass;
  const ChunkCase& c = kCases[0];
  const tpf::ConvAttrs a = attrs_of(c);
  const tpf::Shape ys = out_shape(c);
  const tpf::Tensor x = uniform64(c.x).cast(tpf::float32),
                    w = uniform64(c.w).cast(tpf::float32),
                    dy = uniform64(ys).cast(tpf::float32);
  for (const int threads : {1, 2}) {
    CAPTURE(threads);
    onednn::sync_threads(threads);
    for (const P pass : {P::forward, P::grad_input}) {
      CAPTURE(static_cast<int>(pass));
      const bool forward = pass == P::forward;
      onednn::ConvPrimitive& whole =
          onednn::conv_primitive(pass, a, c.x, c.w, ys, false, false, threads);
      const onednn::ConvOperand& input = forward ? whole.src : whole.dst;
      REQUIRE(input.reordered);
      const dnnl::memory::desc layout = input.internal.get_desc();
      const tpf::Tensor& in = forward ? x : dy;
      tpf::Tensor out = tpf::zeros(forward ? ys : c.x, tpf::float32);
      const auto run = [&](const dnnl::memory::desc* whole_input) {
        return onednn::run_chunked(pass, a, forward ? x : out, w,
                                   forward ? out : dy, tpf::Tensor(), false,
                                   threads, 2, false, whole_input);
      };
      const tpf::Tensor converted = run(&layout);
      REQUIRE(converted.defined());
      const std::vector<char> want = reordered(in, input.user, layout);
      CHECK(std::memcmp(converted.raw_data(), want.data(), want.size()) == 0);
      // Chunks in another layout than the one asked for leave nothing, and
      // the pass's own output is the same.
      const tpf::Tensor first = out * 1.0;
      const dnnl::memory::desc other(layout.dims(), layout.data_type(),
                                     forward ? dnnl::memory::format_tag::nhwc
                                             : dnnl::memory::format_tag::nchw);
      CHECK_FALSE(run(&other).defined());
      CHECK(tpf::max(tpf::abs(out - first)).item<float>() == 0.0f);
    }
  }
  onednn::sync_threads(tpf::config::intra_op_threads());
}
