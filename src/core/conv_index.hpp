#pragma once
// Index maps of the GPU convolution paths (design: CUDA.md §4 "Conv"), shared
// by the CUDA kernels and by CI's host tests, which run each map through a
// naive GEMM and compare it with the direct float64 kernels. Every map turns
// matrix indices into element offsets of the operands (-1: a zero of the
// padding or of a stride gap), so the kernels read any layout through its
// strides and NHWC costs no copy.
#include <cstdint>

#include "core/fast_divmod.hpp"
#include "core/host_device.hpp"

namespace tapeflow {

/**
 * One convolution with its spatial axes padded to three (leading extents 1)
 * and the element strides of its operands, indexed (n, c, d0, d1, d2) for
 * x-shaped, (o, ci, k0, k1, k2) for filter-shaped and (n, o, d0, d1, d2) for
 * y-shaped tensors: x or dx, the filter or dw, y or dy of the pass at hand.
 */
struct ConvGeometry {
  int64_t n = 0, c = 0, o = 0, groups = 1;
  int64_t cg = 0, og = 0;  // channels per group: c / groups, o / groups
  int64_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1}, k[3] = {1, 1, 1};
  int64_t stride[3] = {1, 1, 1}, dil[3] = {1, 1, 1}, pad[3] = {0, 0, 0};
  int64_t x_strides[5] = {}, w_strides[5] = {}, y_strides[5] = {};

  TPF_HOST_DEVICE int64_t in_size() const { return in[0] * in[1] * in[2]; }
  TPF_HOST_DEVICE int64_t out_size() const { return out[0] * out[1] * out[2]; }
  TPF_HOST_DEVICE int64_t k_size() const { return k[0] * k[1] * k[2]; }

  /**
   * Offset in x of channel c of image n at the input position that output
   * position p (flat) reads through tap t (flat), or -1 in the padding.
   */
  TPF_HOST_DEVICE int64_t x_at_window(int64_t n_, int64_t c_, int64_t p,
                                      int64_t t) const {
    int64_t offset = n_ * x_strides[0] + c_ * x_strides[1];
    for (int d = 2; d >= 0; --d) {
      const int64_t i = (p % out[d]) * stride[d] - pad[d] + (t % k[d]) * dil[d];
      if (i < 0 || i >= in[d]) return -1;
      offset += i * x_strides[2 + d];
      p /= out[d];
      t /= k[d];
    }
    return offset;
  }

  /**
   * The output position (flat) that reads input position i (flat) through
   * tap t, or -1 when none does (a stride gap, or past the output's edge).
   */
  TPF_HOST_DEVICE int64_t out_reading(int64_t i, int64_t t) const {
    int64_t p = 0, scale = 1;
    for (int d = 2; d >= 0; --d) {
      const int64_t reach = i % in[d] + pad[d] - (t % k[d]) * dil[d];
      if (reach < 0 || reach % stride[d] != 0) return -1;
      const int64_t od = reach / stride[d];
      if (od >= out[d]) return -1;
      p += od * scale;
      scale *= out[d];
      i /= in[d];
      t /= k[d];
    }
    return p;
  }

  /** Offset in x (or dx) of channel c of image n at input position i. */
  TPF_HOST_DEVICE int64_t x_offset(int64_t n_, int64_t c_, int64_t i) const {
    return n_ * x_strides[0] + c_ * x_strides[1] +
           spatial(i, in, x_strides + 2);
  }
  /** Offset in the filter (or dw) of out-channel o, in-channel ci, tap t. */
  TPF_HOST_DEVICE int64_t w_offset(int64_t o_, int64_t ci, int64_t t) const {
    return o_ * w_strides[0] + ci * w_strides[1] + spatial(t, k, w_strides + 2);
  }
  /** Offset in y (or dy) of channel o of image n at output position p. */
  TPF_HOST_DEVICE int64_t y_offset(int64_t n_, int64_t o_, int64_t p) const {
    return n_ * y_strides[0] + o_ * y_strides[1] +
           spatial(p, out, y_strides + 2);
  }

 private:
  TPF_HOST_DEVICE static int64_t spatial(int64_t flat, const int64_t* extent,
                                         const int64_t* strides) {
    int64_t offset = 0;
    for (int d = 2; d >= 0; --d) {
      offset += (flat % extent[d]) * strides[d];
      flat /= extent[d];
    }
    return offset;
  }
};

// ---- im2col + GEMM, per group and chunk of images [n0, n0 + images) ----
// col is (K, images, P) row-major, K = cg·∏k (row = ci·∏k + tap), so each
// pass is one GEMM: fprop Y_g = W_g·col, dgrad col = W_gᵀ·dY_g then a gather
// into dx, wgrad dW_g += dY_g·colᵀ (beta = 1 across chunks).

/**
 * The divisions that split a column of a chunk (image · P + position) and
 * a position into its axes, prepared on the host: out_size() < 2³¹.
 */
struct ColumnSplit {
  FastDivmod positions, out[3];
};

inline ColumnSplit column_split(const ConvGeometry& g) {
  ColumnSplit s;
  s.positions = FastDivmod(static_cast<uint32_t>(g.out_size()));
  for (int d = 0; d < 3; ++d)
    s.out[d] = FastDivmod(static_cast<uint32_t>(g.out[d]));
  return s;
}

/** Offset of output position p along the spatial axes of `strides`. */
TPF_HOST_DEVICE inline int64_t position_offset(const ColumnSplit& split,
                                               uint32_t p,
                                               const int64_t* strides) {
  int64_t offset = 0;
  for (int d = 2; d >= 0; --d) {
    uint32_t rest, at;
    split.out[d].divmod(p, rest, at);
    offset += int64_t{at} * strides[d];
    p = rest;
  }
  return offset;
}

/**
 * What one row of the col matrix fixes: its channel's offset in x and, per
 * axis, where its tap reads relative to the output position (k·dil − pad).
 */
struct Im2colRow {
  int64_t channel_offset = 0;
  int64_t shift[3] = {0, 0, 0};
};

/** The col matrix of one group and chunk: which x element each entry is. */
struct Im2col {
  ConvGeometry g;
  int64_t group = 0, n0 = 0, images = 0;

  TPF_HOST_DEVICE int64_t rows() const { return g.cg * g.k_size(); }
  TPF_HOST_DEVICE int64_t cols() const { return images * g.out_size(); }
  TPF_HOST_DEVICE Im2colRow row(int64_t r) const {
    const int64_t taps = g.k_size();
    Im2colRow out;
    out.channel_offset = (group * g.cg + r / taps) * g.x_strides[1];
    int64_t t = r % taps;
    for (int d = 2; d >= 0; --d) {
      out.shift[d] = (t % g.k[d]) * g.dil[d] - g.pad[d];
      t /= g.k[d];
    }
    return out;
  }
  /**
   * Offset in x of col(row, col), or -1 for the padding's zero. The column
   * splits through `split` (column_split(g)): the col buffer's budget keeps
   * a chunk's columns far below 2³¹.
   */
  TPF_HOST_DEVICE int64_t operator()(const Im2colRow& r,
                                     const ColumnSplit& split,
                                     uint32_t col) const {
    uint32_t image, p;
    split.positions.divmod(col, image, p);
    int64_t offset = (n0 + image) * g.x_strides[0] + r.channel_offset;
    for (int d = 2; d >= 0; --d) {
      uint32_t rest, at;
      split.out[d].divmod(p, rest, at);
      const int64_t i = int64_t{at} * g.stride[d] + r.shift[d];
      if (i < 0 || i >= g.in[d]) return -1;
      offset += i * g.x_strides[2 + d];
      p = rest;
    }
    return offset;
  }
};

/** W_g as the (og, K) matrix whose columns follow col's rows. */
struct GroupFilter {
  ConvGeometry g;
  int64_t group = 0;

  TPF_HOST_DEVICE int64_t operator()(int64_t o_local, int64_t row) const {
    const int64_t taps = g.k_size();
    return g.w_offset(group * g.og + o_local, row / taps, row % taps);
  }
};

/** Y_g (or dY_g) of a chunk as the (og, images·P) matrix. */
struct GroupOutput {
  ConvGeometry g;
  int64_t group = 0, n0 = 0;

  TPF_HOST_DEVICE int64_t operator()(int64_t o_local, int64_t col) const {
    const int64_t positions = g.out_size();
    return g.y_offset(n0 + col / positions, group * g.og + o_local,
                      col % positions);
  }
  /** The same offset with the column split through `split`, as Im2col's. */
  TPF_HOST_DEVICE int64_t operator()(int64_t o_local, const ColumnSplit& split,
                                     uint32_t col) const {
    uint32_t image, p;
    split.positions.divmod(col, image, p);
    return (n0 + image) * g.y_strides[0] +
           (group * g.og + o_local) * g.y_strides[1] +
           position_offset(split, p, g.y_strides + 2);
  }
};

/** The divisions that split a dx element of a chunk (image, ci, input
 * position) and the position into its axes, prepared on the host. */
struct InputSplit {
  FastDivmod inputs, channels, in[3];
};

inline InputSplit input_split(const ConvGeometry& g) {
  InputSplit s;
  s.inputs = FastDivmod(static_cast<uint32_t>(g.in_size()));
  s.channels = FastDivmod(static_cast<uint32_t>(g.cg));
  for (int d = 0; d < 3; ++d)
    s.in[d] = FastDivmod(static_cast<uint32_t>(g.in[d]));
  return s;
}

/** A dx element of a group and chunk: its image, channel and position. */
struct Col2imElement {
  int64_t image = 0, ci = 0, at[3] = {0, 0, 0};
};

/**
 * col2im as a gather: dx element e of a group and chunk (e row-major over
 * (image, ci, input position)) is the sum of at most ∏k col entries, one
 * per tap that some output position reads it through. One thread per
 * element writes it once: no atomics, and the sum's order is fixed.
 */
struct Col2imGather {
  ConvGeometry g;
  int64_t group = 0, n0 = 0, images = 0;

  TPF_HOST_DEVICE int64_t elements() const {
    return images * g.cg * g.in_size();
  }
  /** Element e, split through `split` (input_split(g)): e < 2³¹. */
  TPF_HOST_DEVICE Col2imElement element(const InputSplit& split,
                                        uint32_t e) const {
    uint32_t rest, i, image, ci;
    split.inputs.divmod(e, rest, i);
    split.channels.divmod(rest, image, ci);
    Col2imElement el;
    el.image = image;
    el.ci = ci;
    for (int d = 2; d >= 0; --d) {
      uint32_t q, at;
      split.in[d].divmod(i, q, at);
      el.at[d] = at;
      i = q;
    }
    return el;
  }
  /** Offset in dx of the element. */
  TPF_HOST_DEVICE int64_t target(const Col2imElement& el) const {
    return (n0 + el.image) * g.x_strides[0] +
           (group * g.cg + el.ci) * g.x_strides[1] + el.at[0] * g.x_strides[2] +
           el.at[1] * g.x_strides[3] + el.at[2] * g.x_strides[4];
  }
  /**
   * Calls f(row, col) for each col entry that sums into the element, in
   * tap order: each tap reaches its output position axis by axis.
   */
  template <class F>
  TPF_HOST_DEVICE void for_each_source(const Col2imElement& el, F&& f) const {
    const int64_t row0 = el.ci * g.k_size(), col0 = el.image * g.out_size();
    for (int64_t k0 = 0; k0 < g.k[0]; ++k0) {
      const int64_t o0 = out_along(0, el.at[0], k0);
      if (o0 < 0) continue;
      for (int64_t k1 = 0; k1 < g.k[1]; ++k1) {
        const int64_t o1 = out_along(1, el.at[1], k1);
        if (o1 < 0) continue;
        for (int64_t k2 = 0; k2 < g.k[2]; ++k2) {
          const int64_t o2 = out_along(2, el.at[2], k2);
          if (o2 < 0) continue;
          f(row0 + (k0 * g.k[1] + k1) * g.k[2] + k2,
            col0 + (o0 * g.out[1] + o1) * g.out[2] + o2);
        }
      }
    }
  }

 private:
  /** The output index along axis d that reads input index id through tap
   * index kd, or -1 (before the start, in a stride gap, past the end). */
  TPF_HOST_DEVICE int64_t out_along(int d, int64_t id, int64_t kd) const {
    const int64_t reach = id + g.pad[d] - kd * g.dil[d];
    if (reach < 0) return -1;
    const int64_t s = g.stride[d];
    if (s != 1 && reach % s != 0) return -1;
    const int64_t od = s == 1 ? reach : reach / s;
    return od < g.out[d] ? od : -1;
  }
};

// ---- implicit GEMM, per group: CUTLASS's fprop/dgrad/wgrad mapping ----
// No col buffer: the GEMM's loaders compute each operand's offset on the
// fly. The filter taps run outer and the channels inner along the GEMM's K
// (CUTLASS's (r, s, c) order), so NHWC loads walk along memory.

/** fprop: M = N·P (image, position), N = og, K = ∏k·cg (tap, ci). */
struct FpropGemm {
  ConvGeometry g;
  int64_t group = 0;

  TPF_HOST_DEVICE int64_t m() const { return g.n * g.out_size(); }
  TPF_HOST_DEVICE int64_t n() const { return g.og; }
  TPF_HOST_DEVICE int64_t k() const { return g.k_size() * g.cg; }
  /** x, or -1 in the padding. */
  TPF_HOST_DEVICE int64_t a(int64_t mi, int64_t ki) const {
    const int64_t positions = g.out_size();
    return g.x_at_window(mi / positions, group * g.cg + ki % g.cg,
                         mi % positions, ki / g.cg);
  }
  TPF_HOST_DEVICE int64_t b(int64_t ki, int64_t ni) const {
    return g.w_offset(group * g.og + ni, ki % g.cg, ki / g.cg);
  }
  TPF_HOST_DEVICE int64_t c(int64_t mi, int64_t ni) const {
    const int64_t positions = g.out_size();
    return g.y_offset(mi / positions, group * g.og + ni, mi % positions);
  }
};

/**
 * dgrad: M = N·∏in (image, input position), N = cg, K = ∏k·og (tap, o).
 * A is dy at the output position that reads the input through the tap.
 */
struct DgradGemm {
  ConvGeometry g;
  int64_t group = 0;

  TPF_HOST_DEVICE int64_t m() const { return g.n * g.in_size(); }
  TPF_HOST_DEVICE int64_t n() const { return g.cg; }
  TPF_HOST_DEVICE int64_t k() const { return g.k_size() * g.og; }
  /** dy, or -1 where no output position reads the input through the tap. */
  TPF_HOST_DEVICE int64_t a(int64_t mi, int64_t ki) const {
    const int64_t inputs = g.in_size();
    const int64_t p = g.out_reading(mi % inputs, ki / g.og);
    return p < 0 ? -1 : g.y_offset(mi / inputs, group * g.og + ki % g.og, p);
  }
  TPF_HOST_DEVICE int64_t b(int64_t ki, int64_t ni) const {
    return g.w_offset(group * g.og + ki % g.og, ni, ki / g.og);
  }
  /** dx. */
  TPF_HOST_DEVICE int64_t c(int64_t mi, int64_t ni) const {
    const int64_t inputs = g.in_size();
    return g.x_offset(mi / inputs, group * g.cg + ni, mi % inputs);
  }
};

/** wgrad: M = og, N = ∏k·cg (tap, ci), K = N·P (image, position). */
struct WgradGemm {
  ConvGeometry g;
  int64_t group = 0;

  TPF_HOST_DEVICE int64_t m() const { return g.og; }
  TPF_HOST_DEVICE int64_t n() const { return g.k_size() * g.cg; }
  TPF_HOST_DEVICE int64_t k() const { return g.n * g.out_size(); }
  /** dy. */
  TPF_HOST_DEVICE int64_t a(int64_t mi, int64_t ki) const {
    const int64_t positions = g.out_size();
    return g.y_offset(ki / positions, group * g.og + mi, ki % positions);
  }
  /** x, or -1 in the padding. */
  TPF_HOST_DEVICE int64_t b(int64_t ki, int64_t ni) const {
    const int64_t positions = g.out_size();
    return g.x_at_window(ki / positions, group * g.cg + ni % g.cg,
                         ki % positions, ni / g.cg);
  }
  /** dw. */
  TPF_HOST_DEVICE int64_t c(int64_t mi, int64_t ni) const {
    return g.w_offset(group * g.og + mi, ni % g.cg, ni / g.cg);
  }
};

/**
 * wgrad's split-K: slice s of `splits` covers K indices [begin(s), end(s)).
 * Each slice writes its partial dw to its own workspace, and a second pass
 * adds the slices in order 0, 1, ...: deterministic, without atomics.
 */
struct SplitK {
  int64_t k = 0, splits = 1;

  TPF_HOST_DEVICE int64_t begin(int64_t s) const { return k * s / splits; }
  TPF_HOST_DEVICE int64_t end(int64_t s) const { return k * (s + 1) / splits; }
};

}  // namespace tapeflow
