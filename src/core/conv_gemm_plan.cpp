// The cuBLAS calls of the GPU convolutions' GEMM paths, per group (and per
// chunk of images for im2col), as data the CUDA code issues and CI's host
// test checks.
#include "core/conv_gemm_plan.hpp"

namespace tapeflow {
namespace {

/** Image n0's channels of x (or dx) of a group as (cg, ∏in), batched. */
std::optional<MatrixRef> x_matrix(const ConvGeometry& g, int64_t group,
                                  int64_t n0) {
  return image_matrix(ConvBuffer::x, g.in, g.x_strides, n0, group * g.cg, g.cg);
}

/** Image n0's channels of y (or dy) of a group as (og, P), batched. */
std::optional<MatrixRef> y_matrix(const ConvGeometry& g, int64_t group,
                                  int64_t n0) {
  return image_matrix(ConvBuffer::y, g.out, g.y_strides, n0, group * g.og,
                      g.og);
}

/**
 * A group's channels of an x- or y-shaped operand as one (channels, N·P)
 * matrix over every image, when images and positions walk as one axis.
 */
std::optional<MatrixRef> all_images_matrix(ConvBuffer buffer,
                                           const ConvGeometry& g,
                                           const int64_t* extent,
                                           const int64_t* strides, int64_t c0,
                                           int64_t channels) {
  const int64_t outer[4] = {g.n, extent[0], extent[1], extent[2]};
  const int64_t outer_strides[4] = {strides[0], strides[2], strides[3],
                                    strides[4]};
  const auto step = flat_stride(outer, outer_strides, 4);
  if (!step) return std::nullopt;
  return strided_matrix(buffer, c0 * strides[1], channels,
                        g.n * extent[0] * extent[1] * extent[2], strides[1],
                        *step);
}

/** The col buffer's entries of image b of a chunk as (K, P), batched. */
MatrixRef col_per_image(const ConvGeometry& g, int64_t images) {
  return {ConvBuffer::col, 0, images * g.out_size(), g.out_size(), false};
}

/** The whole col buffer of a chunk as (K, images·P). */
MatrixRef col_whole(const ConvGeometry& g, int64_t images) {
  return {ConvBuffer::col, 0, images * g.out_size(), 0, false};
}

std::vector<BlasGemm> one(const BlasGemm& call) {
  return {call};
}

}  // namespace

std::vector<BlasGemm> gemm_1x1_forward(const ConvGeometry& g, int64_t group,
                                       bool accumulate) {
  const auto w = group_filter_matrix(g, group);
  const auto x = x_matrix(g, group, 0);
  const auto y = y_matrix(g, group, 0);
  if (!w || !x || !y) return {};
  return one(
      row_major_gemm(g.og, g.out_size(), g.cg, *w, *x, *y, g.n, accumulate));
}

std::vector<BlasGemm> gemm_1x1_grad_input(const ConvGeometry& g,
                                          int64_t group) {
  const auto w = group_filter_matrix(g, group);
  const auto dx = x_matrix(g, group, 0);
  const auto dy = y_matrix(g, group, 0);
  if (!w || !dx || !dy) return {};
  return one(row_major_gemm(g.cg, g.in_size(), g.og, transpose(*w), *dy, *dx,
                            g.n, false));
}

std::vector<BlasGemm> gemm_1x1_grad_filter(const ConvGeometry& g,
                                           int64_t group) {
  const auto dw = group_filter_matrix(g, group);
  if (!dw) return {};
  const auto dy_all = all_images_matrix(ConvBuffer::y, g, g.out, g.y_strides,
                                        group * g.og, g.og);
  const auto x_all = all_images_matrix(ConvBuffer::x, g, g.in, g.x_strides,
                                       group * g.cg, g.cg);
  if (dy_all && x_all)
    return one(row_major_gemm(g.og, g.cg, g.n * g.out_size(), *dy_all,
                              transpose(*x_all), *dw, 1, false));
  // Images apart in memory (channels-first): one GEMM per image, each
  // adding onto the last in image order.
  std::vector<BlasGemm> calls;
  for (int64_t image = 0; image < g.n; ++image) {
    const auto dy = y_matrix(g, group, image);
    const auto x = x_matrix(g, group, image);
    if (!dy || !x) return {};
    calls.push_back(row_major_gemm(g.og, g.cg, g.out_size(), *dy, transpose(*x),
                                   *dw, 1, image > 0));
  }
  return calls;
}

std::vector<BlasGemm> im2col_forward(const ConvGeometry& g, int64_t group,
                                     int64_t n0, int64_t images,
                                     bool accumulate) {
  const auto w = group_filter_matrix(g, group);
  const auto y = y_matrix(g, group, n0);
  if (!w || !y) return {};
  return one(row_major_gemm(g.og, g.out_size(), g.cg * g.k_size(), *w,
                            col_per_image(g, images), *y, images, accumulate));
}

std::vector<BlasGemm> im2col_grad_input(const ConvGeometry& g, int64_t group,
                                        int64_t n0, int64_t images) {
  const auto w = group_filter_matrix(g, group);
  const auto dy = y_matrix(g, group, n0);
  if (!w || !dy) return {};
  return one(row_major_gemm(g.cg * g.k_size(), g.out_size(), g.og,
                            transpose(*w), *dy, col_per_image(g, images),
                            images, false));
}

std::vector<BlasGemm> im2col_grad_filter(const ConvGeometry& g, int64_t group,
                                         int64_t n0, int64_t images) {
  const auto dw = group_filter_matrix(g, group);
  if (!dw) return {};
  const int64_t cols = images * g.out_size();
  const MatrixRef gathered{ConvBuffer::gathered_dy, 0, cols, 0, false};
  return one(row_major_gemm(g.og, g.cg * g.k_size(), cols, gathered,
                            transpose(col_whole(g, images)), *dw, 1, n0 > 0));
}

}  // namespace tapeflow
