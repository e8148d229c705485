#pragma once
// The convolution geometries of test_conv.cpp's tables and more, each in
// channels-first, channels-last and mixed layouts with its float64 direct
// references: shared by the host tests of the GPU convolutions' index maps
// (test_conv_index) and of their kernels' bodies (test_conv_kernels).
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "core/conv_plan.hpp"
#include "cpu/conv_direct.hpp"
#include "ops/nn/layout.hpp"
#include "support/check.hpp"

namespace conv_cases {

using testing::kNan;
using testing::uniform64;
using V = std::vector<int64_t>;
using Buffer = std::vector<double>;

/** A convolution by its channels-first shapes and resolved attributes. */
struct Case {
  std::string name;
  V x, w;
  tpf::ConvAttrs attrs;
};

/**
 * Attributes as nn::conv* resolves them: SAME through the library's own
 * padding rule, strides past the last window start clamped.
 */
inline Case make_case(std::string name, const V& x, const V& w,
                      const V& strides, const V& dilations,
                      const std::string& mode, const V& pads, int64_t groups) {
  Case c{std::move(name), x, w, {}};
  c.attrs.groups = groups;
  for (size_t d = 0; d + 2 < x.size(); ++d) {
    const int64_t s = strides.size() == 1 ? strides[0] : strides[d];
    const int64_t dil = dilations.size() == 1 ? dilations[0] : dilations[d];
    const int64_t extent = (w[d + 2] - 1) * dil + 1;
    tpf::layout::AxisPads p;
    if (mode == "SAME") p = tpf::layout::same_padding(x[d + 2], extent, s);
    if (mode == "EXPLICIT") p = {pads[2 * d], pads[2 * d + 1]};
    c.attrs.strides.push_back(std::min(s, x[d + 2] + p.lo + p.hi - extent + 1));
    c.attrs.dilations.push_back(dil);
    c.attrs.pads_before.push_back(p.lo);
    c.attrs.pads_after.push_back(p.hi);
  }
  return c;
}

/** test_conv.cpp's "match the reference for every option" table. */
inline std::vector<Case> option_table() {
  const std::vector<V> ins = {{9}, {7, 6}, {5, 6, 5}};
  const std::vector<V> ks = {{3}, {3, 2}, {2, 3, 2}};
  std::vector<Case> cases;
  for (int64_t nsp = 1; nsp <= 3; ++nsp) {
    V x{2, 4}, pads;
    x.insert(x.end(), ins[nsp - 1].begin(), ins[nsp - 1].end());
    for (int64_t d = 0; d < nsp; ++d) {
      pads.push_back(d % 2);
      pads.push_back(1);
    }
    for (int64_t groups : {1, 2}) {
      V w{6, 4 / groups};
      w.insert(w.end(), ks[nsp - 1].begin(), ks[nsp - 1].end());
      for (int64_t stride : {1, 2})
        for (int64_t dil : {1, 2})
          for (std::string mode : {"SAME", "VALID", "EXPLICIT"})
            cases.push_back(
                make_case("table nsp " + std::to_string(nsp) + " groups " +
                              std::to_string(groups) + " stride " +
                              std::to_string(stride) + " dil " +
                              std::to_string(dil) + " " + mode,
                          x, w, {stride}, {dil}, mode, pads, groups));
    }
  }
  return cases;
}

/**
 * The forward geometries of test_conv.cpp's other cases (OpCase rows,
 * transposes as the forward they are the input gradient of, bias, depthwise,
 * degenerate rows), then grouped, depthwise, dilated, asymmetric SAME, 3-d
 * and 1x1 ones of their own.
 */
inline std::vector<Case> other_cases() {
  return {
      make_case("conv2d_same_stride2", {2, 2, 5, 4}, {3, 2, 3, 3}, {2}, {1},
                "SAME", {}, 1),
      make_case("conv2d_nhwc_groups_dilated", {1, 4, 5, 4}, {4, 2, 2, 3}, {1},
                {2, 1}, "EXPLICIT", {1, 0, 1, 1}, 2),
      make_case("conv1d_same_stride2", {2, 3, 7}, {2, 3, 3}, {2}, {1}, "SAME",
                {}, 1),
      make_case("conv3d_explicit", {1, 2, 4, 3, 4}, {2, 2, 2, 2, 3}, {1}, {1},
                "EXPLICIT", {1, 0, 0, 1, 1, 1}, 1),
      make_case("conv2d_transpose_same_stride2", {1, 2, 6, 5}, {3, 2, 3, 3},
                {2}, {1}, "SAME", {}, 1),
      make_case("conv3d_transpose_valid_stride2", {1, 2, 4, 5, 4},
                {2, 2, 2, 2, 2}, {2}, {1}, "VALID", {}, 1),
      make_case("depthwise_conv2d", {1, 3, 5, 4}, {6, 1, 3, 3}, {1}, {1},
                "SAME", {}, 3),
      make_case("depthwise_conv2d_nhwc", {1, 3, 5, 5}, {6, 1, 3, 3}, {2}, {1},
                "VALID", {}, 3),
      make_case("separable_depthwise", {1, 2, 5, 5}, {4, 1, 3, 3}, {1}, {1},
                "SAME", {}, 2),
      make_case("separable_pointwise", {1, 4, 5, 5}, {3, 4, 1, 1}, {1}, {1},
                "VALID", {}, 1),
      make_case("depthwise_is_grouped", {2, 3, 6, 5}, {6, 1, 3, 2}, {1, 2}, {1},
                "SAME", {}, 3),
      make_case("transpose_is_input_gradient", {2, 3, 7, 6}, {4, 3, 3, 3}, {2},
                {1, 2}, "SAME", {}, 1),
      make_case("bias_grouped", {2, 4, 6, 5}, {6, 2, 3, 3}, {2, 1}, {1}, "SAME",
                {}, 2),
      make_case("conv1d_bias_nwc_stride2", {2, 3, 7}, {4, 3, 3}, {2}, {1},
                "VALID", {}, 1),
      make_case("conv3d_bias", {1, 2, 3, 4, 3}, {2, 2, 2, 2, 2}, {1}, {1},
                "VALID", {}, 1),
      make_case("blocked_layouts", {2, 16, 7, 6}, {32, 16, 3, 3}, {1}, {1},
                "SAME", {}, 1),
      make_case("empty_batch", {0, 1, 3, 3}, {2, 1, 2, 2}, {1}, {1}, "VALID",
                {}, 1),
      make_case("no_filters", {1, 1, 3, 3}, {0, 1, 2, 2}, {1}, {1}, "VALID", {},
                1),
      make_case("no_input_channels", {1, 0, 3, 3}, {2, 0, 2, 2}, {1}, {1},
                "VALID", {}, 1),
      make_case("three_images_four_groups", {3, 8, 6, 7}, {12, 2, 3, 3}, {2, 1},
                {1}, "SAME", {}, 4),
      make_case("depthwise_multiplier_dilated", {2, 4, 9, 8}, {8, 1, 3, 3}, {1},
                {3, 2}, "SAME", {}, 4),
      make_case("asymmetric_same_even_kernel", {2, 3, 6, 7}, {5, 3, 4, 2}, {1},
                {1}, "SAME", {}, 1),
      make_case("asymmetric_explicit_pads", {2, 2, 5, 6}, {3, 2, 3, 3}, {2},
                {1}, "EXPLICIT", {0, 3, 2, 0}, 1),
      make_case("stride_past_kernel", {2, 2, 11}, {3, 2, 2}, {3}, {1}, "VALID",
                {}, 1),
      make_case("conv3d_grouped_strided_dilated", {2, 4, 6, 5, 7},
                {6, 2, 2, 3, 2}, {2, 1, 2}, {1, 2, 2}, "SAME", {}, 2),
      make_case("one_by_one", {3, 5, 4, 3}, {7, 5, 1, 1}, {1}, {1}, "VALID", {},
                1),
      make_case("first_layer_one_channel", {3, 1, 8, 8}, {4, 1, 5, 5}, {1}, {1},
                "SAME", {}, 1),
  };
}

/**
 * Where a channels-first tensor lies: as is, or channels-last ((N, d..., C)
 * for activations, (k..., I, O) for filters). Axis j of the channels-first
 * view is axis to_first[j] of the stored array.
 */
struct Layout {
  V stored_shape, to_first, strides;
};

inline Layout layout_of(const V& shape, bool last, bool filter) {
  const int64_t rank = static_cast<int64_t>(shape.size());
  Layout l{V(rank), V(rank), V(rank)};
  for (int64_t j = 0; j < rank; ++j)
    l.to_first[j] = !last    ? j
                    : filter ? (j < 2 ? rank - 1 - j : j - 2)
                    : j == 0 ? 0
                    : j == 1 ? rank - 1
                             : j - 1;
  for (int64_t j = 0; j < rank; ++j) l.stored_shape[l.to_first[j]] = shape[j];
  V row_major(rank, 1);
  for (int64_t q = rank - 2; q >= 0; --q)
    row_major[q] = row_major[q + 1] * l.stored_shape[q + 1];
  for (int64_t j = 0; j < rank; ++j) l.strides[j] = row_major[l.to_first[j]];
  return l;
}

/** The elements of channels-first t stored in layout l. */
inline Buffer store(const tpf::Tensor& t, const Layout& l) {
  V inverse(l.to_first.size());
  for (size_t j = 0; j < l.to_first.size(); ++j) inverse[l.to_first[j]] = j;
  return tpf::transpose(t, inverse).to_vector<double>();
}

/** The channels-first view of a buffer stored in layout l. */
inline tpf::Tensor view(const Buffer& b, const Layout& l) {
  return tpf::transpose(tpf::from_vector(b, tpf::Shape(l.stored_shape)),
                        l.to_first);
}

/** The operands of one case in one layout, and the three references. */
struct Problem {
  tpf::ConvGeometry g;
  Layout xl, wl, yl;
  Buffer x, w, dy;
  tpf::Tensor y_ref, dx_ref, dw_ref;
};

inline Problem problem(const Case& c, bool act_last, bool filter_last) {
  const tpf::Shape xs(c.x), ws(c.w), ys = c.attrs.output_shape(xs, ws);
  const auto x = uniform64(xs), w = uniform64(ws), dy = uniform64(ys);
  Problem p;
  p.xl = layout_of(c.x, act_last, false);
  p.wl = layout_of(c.w, filter_last, true);
  p.yl = layout_of(ys.to_vector(), act_last, false);
  p.x = store(x, p.xl);
  p.w = store(w, p.wl);
  p.dy = store(dy, p.yl);
  p.g = tpf::conv_geometry(c.attrs, xs, ws, ys, tpf::Shape(p.xl.strides),
                           tpf::Shape(p.wl.strides), tpf::Shape(p.yl.strides));
  p.y_ref = tpf::zeros(ys, tpf::float64);
  p.dx_ref = tpf::zeros(xs, tpf::float64);
  p.dw_ref = tpf::zeros(ws, tpf::float64);
  tpf::cpu::conv_direct_forward(c.attrs, x, w, p.y_ref);
  tpf::cpu::conv_direct_grad_input(c.attrs, dy, w, p.dx_ref);
  tpf::cpu::conv_direct_grad_filter(c.attrs, x, dy, p.dw_ref);
  return p;
}

/** Buffers of y's, x's and w's layouts filled with NaN: unwritten shows. */
struct Results {
  Buffer y, dx, dw;
};
inline Results nan_results(const Problem& p) {
  return {Buffer(p.y_ref.numel(), kNan), Buffer(p.dx_ref.numel(), kNan),
          Buffer(p.dw_ref.numel(), kNan)};
}

inline void check_results(const Problem& p, const Results& r) {
  CHECK_CLOSE(view(r.y, p.yl), p.y_ref, 1e-12, 1e-12);
  CHECK_CLOSE(view(r.dx, p.xl), p.dx_ref, 1e-12, 1e-12);
  CHECK_CLOSE(view(r.dw, p.wl), p.dw_ref, 1e-12, 1e-12);
}

/** The layouts every case runs in: (activations last, filter last). */
inline constexpr std::pair<bool, bool> kLayouts[] = {
    {false, false}, {true, true}, {true, false}};

}  // namespace conv_cases
