// The GPU convolutions' host-side choices (src/core/conv_plan.hpp) against
// hand-written tables: choose_conv_algo's four rules in order, the images
// per im2col chunk under a memory limit, how a strided operand reads as a
// cuBLAS matrix, and the split counts of the filter gradients. White-box.
#include <string>

#include "conv_cases.hpp"
#include "core/conv_depthwise.hpp"
#include "core/conv_gemm_plan.hpp"
#include "core/conv_plan.hpp"
#include "core/conv_tile.hpp"
#include "support/check.hpp"

using V = std::vector<int64_t>;
using tpf::ConvAlgo;

namespace {

constexpr int64_t MiB = int64_t{1} << 20, GiB = int64_t{1} << 30;

/** Row-major strides of `dims` permuted as the channels-first view sees. */
V strides_of(const V& dims, bool channels_last) {
  const int64_t rank = static_cast<int64_t>(dims.size());
  V stored = dims;
  if (channels_last) {  // (N, C, d...) stored (N, d..., C)
    stored.erase(stored.begin() + 1);
    stored.push_back(dims[1]);
  }
  V row_major(rank, 1);
  for (int64_t q = rank - 2; q >= 0; --q)
    row_major[q] = row_major[q + 1] * stored[q + 1];
  if (!channels_last) return row_major;
  V s{row_major[0], row_major[rank - 1]};
  s.insert(s.end(), row_major.begin() + 1, row_major.end() - 1);
  return s;
}

/** A convolution with `pad` before every axis, and after it `pad` again
 * unless `pad_after` is given. */
tpf::ConvGeometry geometry(const V& x, const V& w, int64_t stride, int64_t pad,
                           int64_t groups, bool channels_last = false,
                           int64_t pad_after = -1) {
  tpf::ConvAttrs a;
  a.groups = groups;
  for (size_t d = 2; d < x.size(); ++d) {
    a.strides.push_back(stride);
    a.dilations.push_back(1);
    a.pads_before.push_back(pad);
    a.pads_after.push_back(pad_after < 0 ? pad : pad_after);
  }
  const tpf::Shape xs(x), ws(w), ys = a.output_shape(xs, ws);
  return tpf::conv_geometry(
      a, xs, ws, ys, tpf::Shape(strides_of(x, channels_last)),
      tpf::Shape(strides_of(w, false)),
      tpf::Shape(strides_of(ys.to_vector(), channels_last)));
}

struct Row {
  std::string name;
  tpf::ConvGeometry g;
  int64_t element_bytes = 4, limit = 16 * GiB;
  bool blas = true;
  ConvAlgo algo;
  int64_t images = 0;
};

}  // namespace

TEST_CASE("choose_conv_algo follows the four rules in order") {
  const auto resnet = geometry({32, 64, 56, 56}, {64, 64, 3, 3}, 1, 1, 1);
  const auto depthwise = geometry({8, 32, 56, 56}, {32, 1, 3, 3}, 1, 1, 32);
  // Spatial strides (16, 2): flat, but neither it nor the channels unit.
  auto sliced_1x1 = geometry({2, 64, 8, 8}, {64, 64, 1, 1}, 1, 0, 1);
  sliced_1x1.x_strides[1] = 128;
  sliced_1x1.x_strides[3] = 16;
  sliced_1x1.x_strides[4] = 2;
  // The gradient of a sum: dy is a broadcast view, every stride 0.
  auto broadcast_dy_1x1 = geometry({2, 3, 4, 4}, {1, 3, 1, 1}, 1, 0, 1);
  for (int64_t& s : broadcast_dy_1x1.y_strides) s = 0;
  const std::vector<Row> rows = {
      {"depthwise", depthwise, 4, 16 * GiB, true, ConvAlgo::depthwise_direct},
      {"depthwise, multiplier 2",
       geometry({8, 32, 56, 56}, {64, 1, 3, 3}, 2, 1, 32), 4, 16 * GiB, true,
       ConvAlgo::depthwise_direct},
      {"depthwise without cuBLAS", depthwise, 4, 16 * GiB, false,
       ConvAlgo::depthwise_direct},
      {"grayscale first layer (one group, K = 25)",
       geometry({64, 1, 28, 28}, {32, 1, 5, 5}, 1, 2, 1), 4, 16 * GiB, true,
       ConvAlgo::im2col_gemm, 64},
      {"RGB first layer, 3x3 (K = 27)",
       geometry({64, 3, 224, 224}, {64, 3, 3, 3}, 1, 1, 1), 4, 16 * GiB, true,
       ConvAlgo::im2col_gemm, 14},
      {"RGB first layer, 1x1 (K = 3)",
       geometry({64, 3, 224, 224}, {64, 3, 1, 1}, 1, 1, 1), 4, 16 * GiB, true,
       ConvAlgo::implicit_gemm},
      {"RGB first layer, 7x7 stride 2 (K = 147)",
       geometry({64, 3, 224, 224}, {64, 3, 7, 7}, 2, 3, 1), 4, 16 * GiB, true,
       ConvAlgo::im2col_gemm, 25},
      {"1x1", geometry({32, 256, 14, 14}, {64, 256, 1, 1}, 1, 0, 1), 4,
       16 * GiB, true, ConvAlgo::gemm_1x1},
      {"1x1 NHWC", geometry({32, 256, 14, 14}, {64, 256, 1, 1}, 1, 0, 1, true),
       4, 16 * GiB, true, ConvAlgo::gemm_1x1},
      {"1x1 3-d", geometry({2, 64, 4, 4, 4}, {32, 64, 1, 1, 1}, 1, 0, 1), 4,
       16 * GiB, true, ConvAlgo::gemm_1x1},
      {"1x1 stride 2", geometry({32, 256, 14, 14}, {64, 256, 1, 1}, 2, 0, 1), 4,
       16 * GiB, true, ConvAlgo::im2col_gemm, 32},
      {"1x1 padded", geometry({32, 256, 14, 14}, {64, 256, 1, 1}, 1, 1, 1), 4,
       16 * GiB, true, ConvAlgo::im2col_gemm, 32},
      {"1x1 padded after only",
       geometry({32, 256, 14, 14}, {64, 256, 1, 1}, 1, 0, 1, false, 1), 4,
       16 * GiB, true, ConvAlgo::im2col_gemm, 32},
      {"1x1 on a view no GEMM reads", sliced_1x1, 4, 16 * GiB, true,
       ConvAlgo::im2col_gemm, 2},
      {"1x1, one out-channel, broadcast dy", broadcast_dy_1x1, 4, 16 * GiB,
       true, ConvAlgo::implicit_gemm},
      {"1x1 without cuBLAS",
       geometry({32, 256, 14, 14}, {64, 256, 1, 1}, 1, 0, 1), 4, 16 * GiB,
       false, ConvAlgo::implicit_gemm},
      {"ResNet 3x3", resnet, 4, 16 * GiB, true, ConvAlgo::im2col_gemm, 32},
      {"ResNet 3x3, 1 GiB", resnet, 4, GiB, true, ConvAlgo::im2col_gemm, 8},
      {"ResNet 3x3, float64, 1 GiB", resnet, 8, GiB, true,
       ConvAlgo::im2col_gemm, 4},
      {"ResNet 3x3, 16 MiB: no room", resnet, 4, 16 * MiB, true,
       ConvAlgo::implicit_gemm},
      {"ResNet 3x3 without cuBLAS", resnet, 4, 16 * GiB, false,
       ConvAlgo::implicit_gemm},
      {"3-d 3x3x3", geometry({2, 32, 16, 16, 16}, {32, 32, 3, 3, 3}, 1, 1, 1),
       4, 16 * GiB, true, ConvAlgo::im2col_gemm, 2},
      {"one image over the 256 MiB cap",
       geometry({1, 256, 256, 256}, {256, 256, 3, 3}, 1, 1, 1), 4, 80 * GiB,
       true, ConvAlgo::implicit_gemm},
      {"8 groups of 8 out-channels",
       geometry({8, 64, 32, 32}, {64, 8, 3, 3}, 1, 1, 8), 4, 16 * GiB, true,
       ConvAlgo::implicit_gemm},
      {"2 groups of 32 out-channels",
       geometry({8, 64, 32, 32}, {64, 32, 3, 3}, 1, 1, 2), 4, 16 * GiB, true,
       ConvAlgo::im2col_gemm, 8},
      {"15 out-channels", geometry({8, 64, 32, 32}, {15, 64, 3, 3}, 1, 1, 1), 4,
       16 * GiB, true, ConvAlgo::implicit_gemm},
      {"K = 32 exactly", geometry({4, 8, 16, 16}, {16, 8, 2, 2}, 1, 0, 1), 4,
       16 * GiB, true, ConvAlgo::im2col_gemm, 4},
      {"K = 16 exactly", geometry({4, 16, 16}, {16, 16, 1}, 2, 0, 1), 4,
       16 * GiB, true, ConvAlgo::im2col_gemm, 4},
      {"K = 15", geometry({4, 15, 16}, {16, 15, 1}, 2, 0, 1), 4, 16 * GiB, true,
       ConvAlgo::implicit_gemm},
      {"1-d, one channel", geometry({4, 1, 100}, {8, 1, 3}, 1, 0, 1), 4,
       16 * GiB, true, ConvAlgo::implicit_gemm},
  };
  for (const Row& r : rows) {
    CAPTURE(r.name);
    const tpf::ConvChoice got = tpf::choose_conv_algo(
        r.g, r.element_bytes, tpf::ConvDeviceFacts{r.blas}, r.limit);
    CHECK(std::string(tpf::conv_algo_name(got.algo)) ==
          tpf::conv_algo_name(r.algo));
    CHECK(got.images_per_chunk == r.images);
  }
}

TEST_CASE("the im2col chunk planner under memory limits") {
  CHECK(tpf::conv_col_budget_bytes(0) == 0);
  CHECK(tpf::conv_col_budget_bytes(GiB) == 64 * MiB);
  CHECK(tpf::conv_col_budget_bytes(4 * GiB) == 256 * MiB);
  CHECK(tpf::conv_col_budget_bytes(80 * GiB) == 256 * MiB);
  // One image's scratch: a col of 576 rows and a gathered dy of 64, x 3136
  // positions = 2007040 entries.
  const auto resnet = geometry({128, 64, 56, 56}, {64, 64, 3, 3}, 1, 1, 1);
  struct Plan {
    int64_t element_bytes, limit, images;
  };
  for (const Plan& p :
       {Plan{4, 16 * GiB, 33}, Plan{4, int64_t{1} << 40, 33}, Plan{4, GiB, 8},
        Plan{8, GiB, 4}, Plan{4, 64 * MiB, 0}, Plan{4, 0, 0}}) {
    CAPTURE(p.element_bytes);
    CAPTURE(p.limit);
    CHECK(tpf::conv_images_per_chunk(resnet, p.element_bytes, p.limit) ==
          p.images);
  }
  // Never more than the batch; a col of no entries takes the whole batch.
  CHECK(tpf::conv_images_per_chunk(
            geometry({3, 4, 5, 5}, {2, 4, 3, 3}, 1, 0, 1), 4, GiB) == 3);
  CHECK(tpf::conv_images_per_chunk(
            geometry({5, 0, 5, 5}, {2, 0, 3, 3}, 1, 0, 1), 4, 0) == 5);
}

TEST_CASE("strided_matrix and flat_stride") {
  using tpf::strided_matrix;
  const auto m = [](int64_t rows, int64_t cols, int64_t rs, int64_t cs) {
    const auto r = strided_matrix(tpf::ConvBuffer::x, 0, rows, cols, rs, cs);
    return r ? (r->transposed ? -r->ld : r->ld) : 0;
  };
  CHECK(m(3, 4, 4, 1) == 4);   // row-major
  CHECK(m(3, 4, 6, 1) == 6);   // row-major with padded rows
  CHECK(m(3, 4, 1, 3) == -3);  // column-major
  CHECK(m(3, 4, 2, 1) == 0);   // rows overlap
  CHECK(m(3, 4, 0, 1) == 0);   // broadcast rows
  CHECK(m(3, 4, 5, 7) == 0);   // neither stride is 1
  CHECK(m(1, 4, 99, 1) == 4);  // one row: its stride is free
  CHECK(m(3, 1, 1, 99) == 1);  // one column: its stride is free
  CHECK(m(3, 1, 5, 99) == 5);
  CHECK(m(3, 1, 0, 99) == 0);  // broadcast rows
  const int64_t nchw[3] = {1, 4, 5}, s_nchw[3] = {20, 5, 1};
  CHECK(tpf::flat_stride(nchw, s_nchw, 3) == 1);
  const int64_t s_nhwc[3] = {60, 15, 3};
  CHECK(tpf::flat_stride(nchw, s_nhwc, 3) == 3);
  const int64_t s_sliced[3] = {40, 10, 1};  // every other row
  CHECK(!tpf::flat_stride(nchw, s_sliced, 3));
  const int64_t ones[3] = {1, 1, 1};
  CHECK(tpf::flat_stride(ones, s_sliced, 3) == 1);
  // Broadcast axes (the gradient of a sum is an all-zero-stride view).
  const int64_t s_broadcast[3] = {0, 0, 0}, s_rows[3] = {0, 1, 0};
  CHECK(!tpf::flat_stride(nchw, s_broadcast, 3));
  CHECK(!tpf::flat_stride(nchw, s_rows, 3));
  CHECK(tpf::flat_stride(ones, s_broadcast, 3) == 1);
}

TEST_CASE("split counts: wgrad's implicit GEMM and depthwise filters") {
  // Few blocks and a long K: 1024 / 4 blocks; 1024 / 1, capped at 256.
  CHECK(tpf::implicit_wgrad_splits(4, 1 << 20, 1024, 256 * MiB) == 256);
  CHECK(tpf::implicit_wgrad_splits(1, 1 << 20, 1024, 256 * MiB) == 256);
  CHECK(tpf::implicit_wgrad_splits(100, 1 << 20, 1024, 256 * MiB) == 11);
  // A short K: slices of at least 256.
  CHECK(tpf::implicit_wgrad_splits(4, 1000, 1024, 256 * MiB) == 3);
  CHECK(tpf::implicit_wgrad_splits(4, 200, 1024, 256 * MiB) == 1);
  // Enough blocks already, or no room for the slices' workspace.
  CHECK(tpf::implicit_wgrad_splits(2000, 1 << 20, 1024, 256 * MiB) == 1);
  CHECK(tpf::implicit_wgrad_splits(4, 1 << 20, 100 * MiB, 256 * MiB) == 2);
  CHECK(tpf::implicit_wgrad_splits(4, 1 << 20, 300 * MiB, 256 * MiB) == 1);

  const auto slices = [](const conv_cases::Case& c) {
    const conv_cases::Problem p = conv_cases::problem(c, false, false);
    return tpf::depthwise_filter_work(p.g);
  };
  // 32 channels × 9 taps = 288 rows over 64 · 28 · 28 terms: 4 slices.
  const auto mobilenet = slices(conv_cases::make_case(
      "dw", {64, 32, 28, 28}, {32, 1, 3, 3}, {1}, {1}, "SAME", {}, 32));
  CHECK(mobilenet.rows == 288);
  CHECK(mobilenet.length == 64 * 28 * 28);
  CHECK(mobilenet.slices == 4);
  // A short sum stays in one slice.
  CHECK(slices(conv_cases::other_cases()[6]).slices == 1);
}
