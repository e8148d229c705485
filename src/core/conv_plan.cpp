// The choice of GPU convolution algorithm and the im2col chunk size.
#include "core/conv_plan.hpp"

#include <algorithm>

namespace tapeflow {
namespace {

// The col buffer is scratch: 1/16 of the memory limit leaves the rest to the
// activations a training step keeps, and past 256 MiB (64 M float32 entries,
// a GEMM with tens of thousands of columns) a larger chunk no longer makes
// the GEMM faster, only the buffer larger.
constexpr int64_t kColCapBytes = int64_t{256} << 20;
constexpr int64_t kColLimitShare = 16;

// im2col pays off when the GEMM does enough with each col entry it writes:
// K >= 16 keeps the col write small next to the GEMM's reads of it, and
// og >= 16 fills at least a quarter of cuBLAS's 64-row tiles. Below either,
// the implicit GEMM skips the col round trip through memory. The implicit
// kernel's loaders split every index in 64 bits, so a grayscale 5×5 first
// layer (K = 25) runs several times faster through im2col + cuBLAS on an
// H100 (fprop and wgrad of the Fashion-MNIST CNN).
constexpr int64_t kMinGemmK = 16;
constexpr int64_t kMinGemmRows = 16;

/**
 * Whether an operand's spatial axes flatten to one axis (axes of extent 1
 * aside) and either it or the channel axis has unit stride: then each
 * image is a matrix a GEMM reads in place (NCHW: C × P, NHWC: P × C).
 */
bool reads_as_matrix(const int64_t* extent, const int64_t* strides) {
  int64_t next = 0, innermost = 0;
  for (int d = 2; d >= 0; --d) {
    if (extent[d] == 1) continue;
    if (strides[2 + d] == 0) return false;  // broadcast: no matrix to read
    if (next != 0 && strides[2 + d] != next) return false;
    if (next == 0) innermost = strides[2 + d];
    next = strides[2 + d] * extent[d];
  }
  return innermost <= 1 || strides[1] == 1;
}

bool is_1x1_unit_stride_unpadded(const ConvGeometry& g) {
  for (int d = 0; d < 3; ++d)
    if (g.k[d] != 1 || g.stride[d] != 1 || g.pad[d] != 0 || g.out[d] != g.in[d])
      return false;
  return true;
}

}  // namespace

ConvGeometry conv_geometry(const ConvAttrs& a, const Shape& x, const Shape& w,
                           const Shape& y, const Shape& x_strides,
                           const Shape& w_strides, const Shape& y_strides) {
  ConvGeometry g;
  g.n = x[0];
  g.c = x[1];
  g.o = w[0];
  g.groups = a.groups;
  g.cg = w[1];
  g.og = w[0] / a.groups;
  for (int j = 0; j < 2; ++j) {
    g.x_strides[j] = x_strides[j];
    g.w_strides[j] = w_strides[j];
    g.y_strides[j] = y_strides[j];
  }
  // Leading axes of extent 1 pad 1-d and 2-d convolutions to three.
  const int64_t lead = 3 - a.spatial();
  for (int64_t i = 0; i < a.spatial(); ++i) {
    const int64_t d = lead + i;
    g.in[d] = x[i + 2];
    g.out[d] = y[i + 2];
    g.k[d] = w[i + 2];
    g.stride[d] = a.strides[i];
    g.dil[d] = a.dilations[i];
    g.pad[d] = a.pads_before[i];
    g.x_strides[2 + d] = x_strides[i + 2];
    g.w_strides[2 + d] = w_strides[i + 2];
    g.y_strides[2 + d] = y_strides[i + 2];
  }
  return g;
}

const char* conv_algo_name(ConvAlgo algo) {
  switch (algo) {
    case ConvAlgo::depthwise_direct:
      return "depthwise_direct";
    case ConvAlgo::gemm_1x1:
      return "gemm_1x1";
    case ConvAlgo::im2col_gemm:
      return "im2col_gemm";
    case ConvAlgo::implicit_gemm:
      return "implicit_gemm";
  }
  return "?";
}

int64_t conv_col_budget_bytes(int64_t memory_limit_bytes) {
  return std::clamp<int64_t>(memory_limit_bytes / kColLimitShare, 0,
                             kColCapBytes);
}

int64_t conv_images_per_chunk(const ConvGeometry& g, int64_t element_bytes,
                              int64_t memory_limit_bytes) {
  const int64_t budget = conv_col_budget_bytes(memory_limit_bytes);
  const int64_t rows = g.cg * g.k_size();
  if (rows == 0 || g.out_size() == 0) return g.n;  // no col, no work
  const int64_t entries = (rows + g.og) * g.out_size();
  // Divisions, not a product that could overflow for huge images.
  const int64_t per_image_limit = budget / element_bytes / entries;
  return std::min(g.n, per_image_limit);
}

ConvChoice choose_conv_algo(const ConvGeometry& g, int64_t element_bytes,
                            const ConvDeviceFacts& device,
                            int64_t memory_limit_bytes) {
  // 1. One input channel per group of several: each output is a short dot
  //    product over its own channel's window, which a direct kernel reads
  //    once; GEMMs would be (og × ∏k) slivers. A single group with one input
  //    channel (a grayscale first layer) is not depthwise: all out-channels
  //    share each window, which the implicit GEMM's tiles reuse.
  if (g.cg == 1 && g.groups > 1) return {ConvAlgo::depthwise_direct, 0};
  if (!device.blas) return {ConvAlgo::implicit_gemm, 0};
  // 2. x itself is the col matrix: no copy at all.
  if (is_1x1_unit_stride_unpadded(g) && reads_as_matrix(g.in, g.x_strides) &&
      reads_as_matrix(g.out, g.y_strides))
    return {ConvAlgo::gemm_1x1, 0};
  // 3. Enough work per GEMM, and a col buffer for at least one image.
  if (g.cg * g.k_size() >= kMinGemmK && g.og >= kMinGemmRows) {
    const int64_t images =
        conv_images_per_chunk(g, element_bytes, memory_limit_bytes);
    if (images >= 1) return {ConvAlgo::im2col_gemm, images};
  }
  // 4. Few input channels, small groups, or no room for a col buffer.
  return {ConvAlgo::implicit_gemm, 0};
}

}  // namespace tapeflow
