// float32 convolutions of channels-last activations (data_format NWC, NHWC,
// NDHWC): oneDNN's reorders read them where they are
// (cpu/onednn/conv_primitive.cpp) instead of from a contiguous copy. The
// forward and both gradients equal those of the same data channels-first bit
// for bit (the same primitives on the same blocked operands): in one pass and
// in chunks, grouped, strided and dilated, in 1-d to 3-d, through the
// few-channel kernels, under bfloat16 products and through conv2d_relu with
// a bias. The profiler sees no copy of x or dy. White-box where it asks which
// tensors count as channels-last, and for the copy into oneDNN's channel
// blocks (cpu/onednn/channel_blocks.cpp) against oneDNN's own reorder.
#include "cpu/onednn/channel_blocks.hpp"
#include "cpu/onednn/common.hpp"
#include "cpu/onednn/conv_primitive.hpp"
#include "cpu/onednn/precision.hpp"
#include "support/check.hpp"
#include "tapeflow/profiler.hpp"

using Ts = std::vector<tpf::Tensor>;
using Opts = tpf::nn::ConvOptions;
namespace onednn = tpf::cpu::onednn;

namespace {

struct Geometry {
  const char* name;
  tpf::Shape x, w;  // channels-first: (N, C, spatial...), (O, C / groups, k...)
  int64_t stride, dilation, groups;
  const char* padding;
};

const Geometry kGeometries[] = {
    {"2d_same", {3, 5, 9, 7}, {6, 5, 3, 3}, 1, 1, 1, "SAME"},
    {"2d_grouped_strided_dilated",
     {2, 8, 10, 9},
     {8, 4, 3, 2},
     2,
     2,
     2,
     "VALID"},
    // 32 channels in: two blocks of 16 (four of 8); 8 out.
    {"2d_blocked_channels", {2, 32, 6, 5}, {8, 32, 3, 3}, 1, 1, 1, "SAME"},
    // 4.5 MiB of activations: in chunks (conv_chunks.cpp).
    {"2d_chunked", {6, 16, 64, 64}, {32, 16, 3, 3}, 1, 1, 1, "SAME"},
    {"2d_one_image", {1, 16, 6, 6}, {16, 16, 3, 3}, 1, 1, 1, "SAME"},
    // Two channels at stride 1: the few-channel kernels, on a copy.
    {"2d_few_channels", {3, 2, 8, 8}, {4, 2, 3, 3}, 1, 1, 1, "SAME"},
    {"1d_same", {4, 6, 11}, {5, 6, 3}, 1, 1, 1, "SAME"},
    {"3d_same", {2, 4, 5, 6, 5}, {3, 4, 2, 3, 2}, 1, 1, 1, "SAME"}};

const char* const kLastFormats[] = {"NWC", "NHWC", "NDHWC"};

/** The permutation taking channels-first (N, C, s...) to (N, s..., C). */
std::vector<int64_t> to_last(int64_t rank) {
  std::vector<int64_t> p{0};
  for (int64_t i = 2; i < rank; ++i) p.push_back(i);
  p.push_back(1);
  return p;
}
/** The permutation taking a filter (O, I, k...) to (k..., I, O). */
std::vector<int64_t> filter_to_last(int64_t rank) {
  std::vector<int64_t> p;
  for (int64_t i = 2; i < rank; ++i) p.push_back(i);
  p.push_back(1);
  p.push_back(0);
  return p;
}
tpf::Tensor last_copy(const tpf::Tensor& t, const std::vector<int64_t>& p) {
  return tpf::transpose(t, p).contiguous();
}

Opts options(const Geometry& g, bool last) {
  const int64_t nsp = g.x.size() - 2;
  return {.strides = {g.stride},
          .padding = g.padding,
          .dilations = std::vector<int64_t>(nsp, g.dilation),
          .groups = g.groups,
          .data_format = last ? kLastFormats[nsp - 1] : "NCHW"};
}

tpf::Tensor convolve(const Geometry& g, const tpf::Tensor& x,
                     const tpf::Tensor& w, bool last, bool relu) {
  const Opts o = options(g, last);
  switch (g.x.size()) {
    case 3:
      return tpf::nn::conv1d(x, w, o);
    case 4: {
      if (!relu) return tpf::nn::conv2d(x, w, o);
      tpf::manual_seed(3);  // the same bias in both layouts
      const int64_t channels = w.shape()[last ? 3 : 0];
      return tpf::nn::conv2d_relu(x, w, tpf::random_uniform({channels}), o);
    }
    default:
      return tpf::nn::conv3d(x, w, o);
  }
}

/** y, dx and dfilter of one layout, for the seed gradient `dy`. */
Ts forward_and_gradients(const Geometry& g, const tpf::Tensor& x,
                         const tpf::Tensor& w, const tpf::Tensor& dy, bool last,
                         bool relu) {
  tpf::GradientTape tape;
  tape.watch(x);
  tape.watch(w);
  const tpf::Tensor y = convolve(g, x, w, last, relu);
  const auto grads = tape.gradient(y, {x, w}, {dy});
  return {y, grads[0], grads[1]};
}

/** Checks the channels-last results equal the channels-first ones. */
void check_layouts_agree(const Geometry& g, bool relu) {
  const std::string name = g.name;
  CAPTURE(name);
  CAPTURE(relu);
  const int64_t rank = g.x.size();
  tpf::manual_seed(11);
  const auto x = tpf::random_uniform(g.x, -1.0, 1.0);
  const auto w = tpf::random_uniform(g.w, -1.0, 1.0);
  const tpf::Tensor y = convolve(g, x, w, false, relu);
  const auto dy = tpf::random_uniform(y.shape(), -1.0, 1.0);
  const Ts first = forward_and_gradients(g, x, w, dy, false, relu);
  const Ts last = forward_and_gradients(
      g, last_copy(x, to_last(rank)), last_copy(w, filter_to_last(rank)),
      last_copy(dy, to_last(rank)), true, relu);
  CHECK_CLOSE(last[0], tpf::transpose(first[0], to_last(rank)), 0.0, 0.0);
  CHECK_CLOSE(last[1], tpf::transpose(first[1], to_last(rank)), 0.0, 0.0);
  CHECK_CLOSE(last[2], tpf::transpose(first[2], filter_to_last(rank)), 0.0,
              0.0);
}

}  // namespace

TEST_CASE("conv channels-last: equal to channels-first bit for bit") {
  for (const Geometry& g : kGeometries) check_layouts_agree(g, false);
  check_layouts_agree(kGeometries[0], true);
  check_layouts_agree(kGeometries[3], true);
}

TEST_CASE("conv channels-last: equal under bfloat16 products") {
  using tpf::config::Float32Precision;
  tpf::config::set_float32_matmul_precision(Float32Precision::medium);
  const bool native = tpf::cpu::multiply_in_bf16();
  if (native) {
    check_layouts_agree(kGeometries[0], false);
    check_layouts_agree(kGeometries[3], false);
  }
  tpf::config::set_float32_matmul_precision(Float32Precision::highest);
  if (!native) MESSAGE("skipped: this CPU multiplies float32 in float32");
}

TEST_CASE("conv channels-last: x and dy reach oneDNN without a copy") {
  for (const Geometry& g : {kGeometries[0], kGeometries[3]}) {
    const std::string name = g.name;
    CAPTURE(name);
    const int64_t rank = g.x.size();
    tpf::manual_seed(5);
    const auto x =
        last_copy(tpf::random_uniform(g.x, -1.0, 1.0), to_last(rank));
    const auto w =
        last_copy(tpf::random_uniform(g.w, -1.0, 1.0), filter_to_last(rank));
    const tpf::Shape y_first =
        convolve(g, tpf::zeros(g.x), tpf::zeros(g.w), false, false).shape();
    const auto dy =
        last_copy(tpf::random_uniform(y_first, -1.0, 1.0), to_last(rank));
    tpf::profiler::start();
    forward_and_gradients(g, x, w, dy, true, false);
    const tpf::profiler::Report report = tpf::profiler::stop();
    int copies = 0, convolutions = 0;
    for (const auto& e : report.events()) {
      if (e.name.rfind("conv", 0) == 0) ++convolutions;
      if (e.name == "cast" && !e.input_shapes.empty() &&
          (e.input_shapes[0] == g.x || e.input_shapes[0] == y_first))
        ++copies;
    }
    CHECK(convolutions >= 3);
    CHECK(copies == 0);
  }
}

/** f(x) and its gradient wrt x for the seed `dy` (of f(x)'s shape). */
template <class F>
Ts value_and_gradient(F f, const tpf::Tensor& x, const tpf::Tensor& dy) {
  tpf::GradientTape tape;
  tape.watch(x);
  const tpf::Tensor y = f(x);
  return {y, tape.gradient(y, {x}, {dy})[0]};
}

TEST_CASE("conv channels-last: depthwise, transposed and offset inputs") {
  tpf::manual_seed(17);
  const auto x = tpf::random_uniform({3, 16, 7, 6}, -1.0, 1.0);
  const auto x_last = last_copy(x, to_last(4));
  // Depthwise, multiplier 2: filter (C * M, 1, k, k), TF's (k, k, C, M).
  const auto depthwise = tpf::random_uniform({32, 1, 3, 3}, -1.0, 1.0);
  const auto depthwise_last =
      tpf::transpose(tpf::reshape(depthwise, {16, 2, 3, 3}), {2, 3, 0, 1})
          .contiguous();
  const auto dy = tpf::random_uniform({3, 32, 7, 6}, -1.0, 1.0);
  const Ts first = value_and_gradient(
      [&](const tpf::Tensor& in) {
        return tpf::nn::depthwise_conv2d(in, depthwise, {.padding = "SAME"});
      },
      x, dy);
  const Ts last = value_and_gradient(
      [&](const tpf::Tensor& in) {
        return tpf::nn::depthwise_conv2d(
            in, depthwise_last, {.padding = "SAME", .data_format = "NHWC"});
      },
      x_last, last_copy(dy, to_last(4)));
  for (int i = 0; i < 2; ++i)
    CHECK_CLOSE(last[i], tpf::transpose(first[i], to_last(4)), 0.0, 0.0);

  // Transposed: x is the forward's output, of 16 channels, into 8.
  const auto filter = tpf::random_uniform({16, 8, 3, 3}, -1.0, 1.0);
  const auto dz = tpf::random_uniform({3, 8, 7, 6}, -1.0, 1.0);
  const Ts t_first = value_and_gradient(
      [&](const tpf::Tensor& in) {
        return tpf::nn::conv2d_transpose(in, filter, {3, 8, 7, 6},
                                         {.padding = "SAME"});
      },
      x, dz);
  const Ts t_last = value_and_gradient(
      [&](const tpf::Tensor& in) {
        return tpf::nn::conv2d_transpose(
            in, last_copy(filter, filter_to_last(4)), {3, 7, 6, 8},
            {.padding = "SAME", .data_format = "NHWC"});
      },
      x_last, last_copy(dz, to_last(4)));
  for (int i = 0; i < 2; ++i)
    CHECK_CLOSE(t_last[i], tpf::transpose(t_first[i], to_last(4)), 0.0, 0.0);

  // Images 1 and 2 of an NHWC batch of three: a view from an offset.
  const auto w = tpf::random_uniform({8, 16, 3, 3}, -1.0, 1.0);
  const auto w_last = last_copy(w, filter_to_last(4));
  const auto images = tpf::slice(x_last, {1, 0, 0, 0}, {2, 7, 6, 16});
  const auto dw = tpf::random_uniform({2, 7, 6, 8}, -1.0, 1.0);
  const auto conv_last = [&](const tpf::Tensor& in) {
    return tpf::nn::conv2d(in, w_last,
                           {.padding = "SAME", .data_format = "NHWC"});
  };
  const Ts from_view = value_and_gradient(conv_last, images, dw);
  // A sum with zeros: the same images in storage of their own.
  const Ts from_copy =
      value_and_gradient(conv_last, images + tpf::zeros_like(images), dw);
  REQUIRE(images.offset() != 0);
  for (int i = 0; i < 2; ++i) CHECK_CLOSE(from_view[i], from_copy[i], 0.0, 0.0);
}

TEST_CASE("conv channels-last: which tensors count (white-box)") {
  const auto nchw = tpf::random_uniform({2, 3, 4, 5});
  const auto nhwc = tpf::random_uniform({2, 4, 5, 3});
  const auto view = tpf::transpose(nhwc, {0, 3, 1, 2});
  CHECK_FALSE(onednn::is_channels_last(nchw));
  CHECK(onednn::is_channels_last(view));
  // One channel: channels-first and channels-last are the same memory.
  CHECK(onednn::is_channels_last(tpf::random_uniform({2, 1, 4, 5})));
  // Four of five columns: rows further apart than they are long.
  const auto columns = tpf::slice(nhwc, {0, 0, 0, 0}, {2, 4, 4, 3});
  CHECK_FALSE(onednn::is_channels_last(tpf::transpose(columns, {0, 3, 1, 2})));
  // Four of five rows: images further apart than they are long.
  const auto rows =
      tpf::slice(tpf::random_uniform({2, 5, 4, 3}), {0, 0, 0, 0}, {2, 4, 4, 3});
  CHECK_FALSE(onednn::is_channels_last(tpf::transpose(rows, {0, 3, 1, 2})));
  // Images 1 and 2 of three: dense, from an offset.
  const auto images =
      tpf::slice(tpf::random_uniform({3, 4, 5, 3}), {1, 0, 0, 0}, {2, 4, 5, 3});
  CHECK(onednn::is_channels_last(tpf::transpose(images, {0, 3, 1, 2})));
  CHECK_FALSE(onednn::is_channels_last(tpf::random_uniform({2, 3})));
  CHECK(onednn::is_channels_last(
      tpf::transpose(tpf::random_uniform({2, 3, 4, 5, 6}), {0, 4, 1, 2, 3})));
  const auto layouts = onednn::caller_layouts(view, nchw);
  CHECK(layouts.x_last);
  CHECK_FALSE(layouts.y_last);
}

TEST_CASE("conv channels-last: the copy into channel blocks (white-box)") {
  using dnnl::memory;
  using tag = memory::format_tag;
  constexpr auto f32 = memory::data_type::f32;
  const memory::dims d4{3, 32, 5, 7};
  const memory::desc nhwc(d4, f32, tag::nhwc);
  CHECK(onednn::channel_block_of(nhwc, memory::desc(d4, f32, tag::nChw16c)) ==
        16);
  CHECK(onednn::channel_block_of(nhwc, memory::desc(d4, f32, tag::nChw8c)) ==
        8);
  CHECK(onednn::channel_block_of(memory::desc(d4, f32, tag::nchw),
                                 memory::desc(d4, f32, tag::nChw16c)) == 0);
  CHECK(onednn::channel_block_of(nhwc, memory::desc(d4, f32, tag::nchw)) == 0);
  // 24 channels in blocks of 16: the last block padded, left to oneDNN.
  const memory::dims padded{3, 24, 5, 7};
  CHECK(onednn::channel_block_of(memory::desc(padded, f32, tag::nhwc),
                                 memory::desc(padded, f32, tag::nChw16c)) == 0);
  CHECK(onednn::channel_block_of(
            memory::desc(d4, memory::data_type::bf16, tag::nhwc),
            memory::desc(d4, memory::data_type::bf16, tag::nChw16c)) == 0);

  const struct {
    memory::dims dims;
    tag from, to;
  } copies[] = {{{2, 32, 9}, tag::nwc, tag::nCw16c},
                {{3, 32, 5, 7}, tag::nhwc, tag::nChw16c},
                {{3, 16, 5, 7}, tag::nhwc, tag::nChw8c},
                {{2, 16, 3, 4, 5}, tag::ndhwc, tag::nCdhw16c},
                {{2, 8, 3, 4, 5}, tag::ndhwc, tag::nCdhw8c}};
  for (const auto& c : copies) {
    CAPTURE(c.dims.size());
    const memory::desc from_md(c.dims, f32, c.from), to_md(c.dims, f32, c.to);
    const int block = onednn::channel_block_of(from_md, to_md);
    REQUIRE(block != 0);
    const size_t n = from_md.get_size() / sizeof(float);
    std::vector<float> src(n), ours(n, -1.0f), theirs(n, -2.0f);
    for (size_t i = 0; i < n; ++i) src[i] = float(i);
    memory from(from_md, onednn::engine(), src.data());
    onednn::copy_into_channel_blocks(
        from, memory(to_md, onednn::engine(), ours.data()), block);
    memory reference(to_md, onednn::engine(), theirs.data());
    dnnl::reorder(from, reference).execute(onednn::stream(), from, reference);
    onednn::stream().wait();
    CHECK(ours == theirs);
  }
}
