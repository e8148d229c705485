// The kernels of conv_few_channels.hpp. Each image's input planes are staged
// zero-padded, once per filter column j, so that output (oh, ow) reads tap
// (kh, kw) at a batch (8 floats with AVX2) of plane kw's row oh + kh*dh
// without bounds checks.
//
// Filter gradient: staged rows are ow rounded up to whole batches (aligned
// loads), and dy rows are staged at the same width, zero past their end. A
// register block of 2 output channels x up to 6 taps of a filter row then
// walks the staged rows as one run: per batch, 2 + 6 aligned loads feed 12
// multiply-adds into accumulators that stay batches until the last image.
// Work is split over pairs of output channels, so a layer with O output
// channels uses at most O/2 threads. N=64, 1->32, 28x28, k5, 1 thread, AVX2
// build: 1.3 ms, against 2.5 ms for oneDNN 2.6's GEMM kernel (which does not
// use a second thread) and 7.3 ms for its blocked kernel (the one it picks by
// itself: 6.0 ms at 2 threads).
//
// Forward: staged rows are ow wide and back to back, like y's rows, so
// position r * ow + c of a staged plane lines up with the same position of
// y's plane and a batch of outputs may span rows. A register block of 4
// output channels x 3 batches starts at the bias, takes per tap 3 loads and
// 4 broadcast weights into 12 multiply-adds (8 accumulators left the FMA
// latency no slack: 0.8x oneDNN at 2 threads), and is stored straight into
// y from its registers; 3x3 and 5x5 filters of one channel run their taps
// unrolled. Work is split over (image, 8 output channels) units. Same layer,
// Zen 3, alternated runs: 1.14 ms at 1 thread and 0.64 ms at 2 against
// 1.18 and 0.64 ms for oneDNN's kernel into its blocked layout, which a
// tensor in NCHW then pays a 0.45 ms reorder after.
#include "cpu/conv_few_channels.hpp"

#include <algorithm>
#include <cstring>
#include <utility>
#include <vector>

#include "cpu/parallel.hpp"
#include "cpu/xsimd_config.hpp"

namespace tapeflow::cpu {
namespace {

using B = xsimd::batch<float>;
constexpr int64_t L = B::size;
using Floats = std::vector<float, xsimd::aligned_allocator<float, 64>>;

/** The largest staged input plane, in floats (16 MiB). */
constexpr int64_t kMaxPlane = int64_t{1} << 22;
/** The most filter elements (O x C x KH x KW) the kernel takes. */
constexpr int64_t kMaxAccumulators = int64_t{1} << 18;
/** Multiply-adds below which a kernel stays on the calling thread. */
constexpr int64_t kWorkPerThread = int64_t{1} << 17;
/** Output channels x filter taps per register block: 12 accumulators. */
constexpr int kGradChannels = 2;
constexpr int kTapBlock = 6;
/** Forward: output channels x position batches per register block, and
 * the channels of one image a thread takes at a time. */
constexpr int kForwardChannels = 4;
constexpr int kPositionBlock = 3;
constexpr int64_t kForwardGroup = 8;

struct Geometry {
  int64_t n, c, ih, iw, o, kh, kw, dil_h, dil_w, pt, pl, oh, ow;
  // The width of a staged row: ow rounded up to whole batches for the filter
  // gradient (aligned loads), ow itself for the forward (rows back to back,
  // as in y, so that a batch of outputs may span rows).
  int64_t row;
  int64_t plane_h;  // rows of a staged input plane

  Geometry(const ConvAttrs& a, const Shape& x, const Shape& w)
      : n(x[0]),
        c(x[1]),
        ih(x[2]),
        iw(x[3]),
        o(w[0]),
        kh(w[2]),
        kw(w[3]),
        dil_h(a.dilations[0]),
        dil_w(a.dilations[1]),
        pt(a.pads_before[0]),
        pl(a.pads_before[1]) {
    oh = ih + pt + a.pads_after[0] - (kh - 1) * dil_h;
    ow = iw + pl + a.pads_after[1] - (kw - 1) * dil_w;
    row = (ow + L - 1) / L * L;
    plane_h = oh + (kh - 1) * dil_h;
  }
  int64_t taps() const { return c * kh * kw; }
};

/**
 * One image's input, staged once per filter column j: row r of plane
 * (ci, j) holds the zero-padded input row r from column j*dw on, so that
 * every load of a row batch is aligned (an unaligned one that crosses a
 * cache line costs two). Only the interior is written per image: the
 * padding stays zero from one image to the next.
 */
struct StagedImage {
  const Geometry& g;
  Floats planes;
  explicit StagedImage(const Geometry& geometry)
      : g(geometry), planes(g.c * g.kw * g.plane_h * g.row + L, 0.0f) {}
  void stage(const float* x_image) {
    for (int64_t ci = 0; ci < g.c; ++ci)
      for (int64_t j = 0; j < g.kw; ++j) {
        // Input column q lands at staged column q + shift. Staged columns
        // from ow on stay zero: they meet the zero tail of the dy rows, and
        // an inf staged there would turn 0 * inf into a NaN.
        const int64_t shift = g.pl - j * g.dil_w;
        const int64_t first = std::max<int64_t>(0, -shift);
        const int64_t last = std::min(g.iw, g.ow - shift);
        if (first >= last) continue;
        const float* x_plane = x_image + ci * g.ih * g.iw;
        if (g.row == g.iw)
          stage_as_one_run(x_plane, at(ci, j, g.pt), first, last, shift);
        else
          for (int64_t r = 0; r < g.ih; ++r)
            std::memcpy(at(ci, j, r + g.pt) + first + shift,
                        x_plane + r * g.iw + first,
                        (last - first) * sizeof(float));
      }
  }
  /**
   * Staged rows as wide as the input's (a forward whose output is as wide
   * as its input, a filter gradient whose rows rounded up to whole batches
   * are) put input column q of every row at the same distance from it: one
   * copy of the whole plane, then the columns outside [first, last) that it
   * carried over zeroed again. Conv a's forward (28 floats a row) spent 5 %
   * of its time staging with a memcpy a row, 4 % so.
   */
  void stage_as_one_run(const float* x_plane, float* top_row, int64_t first,
                        int64_t last, int64_t shift) {
    float* to = top_row + shift;  // input column q of row r: to[r * iw + q]
    std::memcpy(to + first, x_plane + first,
                ((g.ih - 1) * g.iw + last - first) * sizeof(float));
    for (int64_t r = 0; r + 1 < g.ih; ++r)
      std::fill(to + r * g.iw + last, to + (r + 1) * g.iw + first, 0.0f);
  }
  float* at(int64_t ci, int64_t j, int64_t r) {
    return planes.data() + ((ci * g.kw + j) * g.plane_h + r) * g.row;
  }
  const float* at(int64_t ci, int64_t j, int64_t r) const {
    return planes.data() + ((ci * g.kw + j) * g.plane_h + r) * g.row;
  }
};

/**
 * v, kept in a register: GCC otherwise folds a load into every
 * multiply-add that uses it, doubling the loads of a register block.
 */
[[gnu::always_inline]] inline B in_register(B v) {
  asm("" : "+x"(v.data));
  return v;
}

/** f.template run<N>(start) for the N that equals `left` (0: nothing). */
template <int N, class F>
void run_remainder(int64_t left, int64_t start, const F& f) {
  if constexpr (N > 0) {
    if (left == N)
      f.template run<N>(start);
    else
      run_remainder<N - 1>(left, start, f);
  }
}

/**
 * Covers [0, count) with register blocks: f.template run<kMax>(start) for
 * each whole one, then one narrower block for the rest.
 */
template <int kMax, class F>
void in_blocks(int64_t count, const F& f) {
  int64_t start = 0;
  for (; count - start >= kMax; start += kMax) f.template run<kMax>(start);
  run_remainder<kMax - 1>(count - start, start, f);
}

/**
 * Taps (ci, i, j0 .. j0+CW-1) of output channels oc .. oc+OCB-1 over one
 * image: `acc` holds the block's batches, OCB x taps of them; `dy` the
 * staged dy rows of its channels (OCB x oh rows of g.row floats).
 */
template <int OCB>
struct GradFilterBlock {
  const Geometry& g;
  const StagedImage& in;
  const float* dy;
  float* acc;
  int64_t ci, i;

  template <int CW>
  [[gnu::always_inline]] void run(int64_t j0) const {
    const int64_t taps = g.taps(), tap0 = (ci * g.kh + i) * g.kw + j0;
    B a[OCB][CW];
    for (int o = 0; o < OCB; ++o)
      for (int q = 0; q < CW; ++q)
        a[o][q] = B::load_aligned(acc + (o * taps + tap0 + q) * L);
    // Staged rows are contiguous: output rows and the input rows under tap
    // row i are one run each, walked in a single loop.
    const int64_t span = g.oh * g.row;
    const float* xs[CW];
    for (int q = 0; q < CW; ++q) xs[q] = in.at(ci, j0 + q, i * g.dil_h);
    for (int64_t k = 0; k < span; k += L) {
      B gv[OCB];
      for (int o = 0; o < OCB; ++o) gv[o] = B::load_aligned(dy + o * span + k);
      for (int q = 0; q < CW; ++q) {
        const B xv = in_register(B::load_aligned(xs[q] + k));
        for (int o = 0; o < OCB; ++o) a[o][q] = xsimd::fma(gv[o], xv, a[o][q]);
      }
    }
    for (int o = 0; o < OCB; ++o)
      for (int q = 0; q < CW; ++q)
        a[o][q].store_aligned(acc + (o * taps + tap0 + q) * L);
  }
};

template <int OCB>
void grad_filter_channels(const Geometry& g, const StagedImage& in,
                          const float* dy, float* acc) {
  for (int64_t ci = 0; ci < g.c; ++ci)
    for (int64_t i = 0; i < g.kh; ++i)
      in_blocks<kTapBlock>(g.kw, GradFilterBlock<OCB>{g, in, dy, acc, ci, i});
}

/** The filter gradient of a thread's output channels over one image. */
struct GradFilterChannels {
  const Geometry& g;
  const StagedImage& in;
  const float* dy_image;
  float* staged_dy;  // kGradChannels x oh rows of g.row floats, zero past ow
  float* acc;        // the thread's accumulators, from its first channel on
  int64_t first;     // the thread's first channel

  template <int OCB>
  void run(int64_t start) const {
    const float* src = dy_image + (first + start) * g.oh * g.ow;
    for (int64_t r = 0; r < OCB * g.oh; ++r)
      std::memcpy(staged_dy + r * g.row, src + r * g.ow, g.ow * sizeof(float));
    grad_filter_channels<OCB>(g, in, staged_dy, acc + start * g.taps() * L);
  }
};

/**
 * The forward's operands as its register blocks read them: for each filter
 * element (tap), where its staged input rows start in StagedImage::planes,
 * and the filter transposed to taps x output channels, so that a block's
 * channels take their weights of one tap from consecutive floats.
 */
struct ForwardTaps {
  std::vector<int64_t> offsets;
  Floats weights;
  ForwardTaps(const Geometry& g, const float* w)
      : offsets(g.taps()), weights(g.taps() * g.o) {
    for (int64_t ci = 0; ci < g.c; ++ci)
      for (int64_t i = 0; i < g.kh; ++i)
        for (int64_t j = 0; j < g.kw; ++j)
          offsets[(ci * g.kh + i) * g.kw + j] =
              ((ci * g.kw + j) * g.plane_h + i * g.dil_h) * g.row;
    for (int64_t oc = 0; oc < g.o; ++oc)
      for (int64_t t = 0; t < g.taps(); ++t)
        weights[t * g.o + oc] = w[oc * g.taps() + t];
  }
};

/**
 * f(t) for each tap t in [0, taps), unrolled where kTaps (> 0) is the count:
 * a register block then runs its taps without a loop branch, whose
 * misprediction at each block's end cost a tenth of the forward (Zen 3).
 */
template <int kTaps, class F>
[[gnu::always_inline]] inline void for_each_tap(int64_t taps, const F& f) {
  if constexpr (kTaps > 0) {
    [&]<int64_t... T>(std::integer_sequence<int64_t, T...>)
        __attribute__((always_inline)) {
      (f(T), ...);
    }
    (std::make_integer_sequence<int64_t, kTaps>{});
  } else {
    for (int64_t t = 0; t < taps; ++t) f(t);
  }
}

/**
 * f.template operator()<kTaps>() with kTaps the tap count of the usual first
 * layers (3x3 and 5x5 filters of one channel), else 0 (counted at run time).
 */
template <class F>
void with_tap_count(int64_t taps, const F& f) {
  if (taps == 9)
    f.template operator()<9>();
  else if (taps == 25)
    f.template operator()<25>();
  else
    f.template operator()<0>();
}

/** One staged image and where its output planes go. */
struct ForwardImage {
  const Geometry& g;
  const StagedImage& in;
  const ForwardTaps& taps;
  const float* bias;  // null without a bias
  float* y;           // the image's output, O planes of oh x ow
};

/**
 * Output channels oc .. oc+OCB-1 of one image over PB batches of positions
 * (output row r, column col is position r * ow + col, as in y): each batch
 * starts at the bias and adds tap after tap in the order of the filter's
 * elements. Per tap, OCB broadcast weights and PB loads feed OCB x PB
 * multiply-adds.
 */
template <int OCB, int kTaps, bool kRelu>
struct ForwardBlock {
  const ForwardImage& im;
  int64_t oc;

  template <int PB>
  [[gnu::always_inline]] void run(int64_t start) const {
    if ((start + PB) * L <= im.g.oh * im.g.ow) [[likely]]
      sum<PB, true>(start);
    else
      end_of_plane<PB>(start);
  }

  // Out of line: the accumulators of a whole block then stay in registers up
  // to their stores (with the partial stores inline, GCC kept them on the
  // stack, a tenth of the kernel's time).
  template <int PB>
  [[gnu::noinline]] void end_of_plane(int64_t start) const {
    sum<PB, false>(start);
  }

  template <int PB, bool Whole>
  [[gnu::always_inline]] void sum(int64_t start) const {
    const int64_t pos = start * L;
    // The sums start at the bias: no pass over the block after its taps.
    B a[OCB][PB];
    for (int o = 0; o < OCB; ++o) {
      const B first = im.bias ? B(im.bias[oc + o]) : B(0.0f);
      for (int p = 0; p < PB; ++p) a[o][p] = first;
    }
    const float* x = im.in.planes.data() + pos;
    const float* w = im.taps.weights.data() + oc;
    const int64_t* offsets = im.taps.offsets.data();
    for_each_tap<kTaps>(
        im.g.taps(), [&](int64_t t) __attribute__((always_inline)) {
          B xv[PB];
          for (int p = 0; p < PB; ++p)
            xv[p] = in_register(B::load_unaligned(x + offsets[t] + p * L));
          // One weight live at a time: PB + 1 registers besides the block's.
          const float* wt = w + t * im.g.o;
          for (int o = 0; o < OCB; ++o) {
            const B wv = in_register(B(wt[o]));
            for (int p = 0; p < PB; ++p)
              a[o][p] = xsimd::fma(wv, xv[p], a[o][p]);
          }
        });
    // Whole batches, and at the end of a plane only what is in it.
    const int64_t plane = im.g.oh * im.g.ow;
    float* y = im.y + oc * plane + pos;
    for (int o = 0; o < OCB; ++o)
      for (int p = 0; p < PB; ++p) {
        if constexpr (kRelu)  // NaN kept, as the Relu op keeps it
          a[o][p] = xsimd::select(a[o][p] <= B(0.0f), B(0.0f), a[o][p]);
        if constexpr (Whole) {
          a[o][p].store_unaligned(y + o * plane + p * L);
        } else {
          alignas(64) float batch[L];
          a[o][p].store_aligned(batch);
          for (int64_t k = 0; k < std::min(L, plane - pos - p * L); ++k)
            y[o * plane + p * L + k] = batch[k];
        }
      }
  }
};

/** One image's output channels [first, first + OCB). */
template <int kTaps, bool kRelu>
struct ForwardChannels {
  const ForwardImage& im;
  int64_t first;

  template <int OCB>
  void run(int64_t start) const {
    in_blocks<kPositionBlock>(
        (im.g.oh * im.g.ow + L - 1) / L,
        ForwardBlock<OCB, kTaps, kRelu>{im, first + start});
  }
};

/** The staged geometry fits the kernels' bounds (sizes stay in int64). */
bool stageable(const ConvAttrs& a, const Shape& x, const Shape& filter) {
  if (a.spatial() != 2 || a.groups != 1 || x[1] > 2) return false;
  for (int d = 0; d < 2; ++d)
    if (a.strides[d] != 1 || a.pads_before[d] < 0 || a.pads_after[d] < 0 ||
        a.pads_before[d] > kMaxPlane || a.pads_after[d] > kMaxPlane)
      return false;
  // Bounds that keep every product below in int64.
  for (int64_t v :
       {x[2], x[3], filter[2], filter[3], a.dilations[0], a.dilations[1]})
    if (v > kMaxPlane) return false;
  const Geometry g(a, x, filter);
  if (g.oh <= 0 || g.ow <= 0) return false;
  const int64_t plane = g.plane_h * g.row;
  return plane <= kMaxPlane && g.c * g.kw <= kMaxPlane / plane;
}

}  // namespace

bool few_channels_conv_applies(const ConvAttrs& a, const Shape& x,
                               const Shape& filter) {
  // Each thread keeps a batch per filter element: at most 8 MiB per thread
  // with AVX2's 8-float batches.
  if (!stageable(a, x, filter)) return false;
  const Geometry g(a, x, filter);
  return g.o * g.taps() <= kMaxAccumulators;
}

bool few_channels_conv_forward_applies(const ConvAttrs& a, const Shape& x,
                                       const Shape& filter) {
  return stageable(a, x, filter);
}

void few_channels_conv_forward(const ConvAttrs& a, const Tensor& x,
                               const Tensor& w, const Tensor& bias, Tensor& y,
                               bool relu) {
  Geometry g(a, x.shape(), w.shape());
  g.row = g.ow;
  const float* xs = x.data<float>();
  const ForwardTaps taps(g, w.data<float>());
  const float* bs = bias.defined() ? bias.data<float>() : nullptr;
  float* ys = y.data<float>();
  // Units of one image's kForwardGroup channels, image by image: a thread
  // stages an image once for all the units of it that it takes.
  const int64_t groups = (g.o + kForwardGroup - 1) / kForwardGroup;
  const int64_t unit_work = kForwardGroup * g.oh * g.row * g.taps();
  parallel_for(
      g.n * groups, std::max<int64_t>(1, kWorkPerThread / unit_work),
      [&](int64_t begin, int64_t end) {
        StagedImage in(g);
        int64_t staged = -1;
        for (int64_t u = begin; u < end; ++u) {
          const int64_t n = u / groups, first = u % groups * kForwardGroup;
          if (n != staged) in.stage(xs + n * g.c * g.ih * g.iw), staged = n;
          const ForwardImage image{g, in, taps, bs, ys + n * g.o * g.oh * g.ow};
          // relu a template argument: a branch in the store loop cost the
          // kernel without relu 8 % (conv a forward, Zen 4).
          const int64_t count = std::min(kForwardGroup, g.o - first);
          with_tap_count(g.taps(), [&]<int kTaps>() {
            if (relu)
              in_blocks<kForwardChannels>(
                  count, ForwardChannels<kTaps, true>{image, first});
            else
              in_blocks<kForwardChannels>(
                  count, ForwardChannels<kTaps, false>{image, first});
          });
        }
      });
}

void few_channels_conv_grad_filter(const ConvAttrs& a, const Tensor& x,
                                   const Tensor& dy, Tensor& dw) {
  const Geometry g(a, x.shape(), dw.shape());
  const float* xs = x.data<float>();
  const float* dys = dy.data<float>();
  float* dws = dw.data<float>();
  const int64_t taps = g.taps();
  const int64_t blocks = (g.o + kGradChannels - 1) / kGradChannels;
  const int64_t block_work = kGradChannels * g.n * g.oh * g.row * taps;
  parallel_for(
      blocks, std::max<int64_t>(1, kWorkPerThread / block_work),
      [&](int64_t begin, int64_t end) {
        const int64_t first = begin * kGradChannels;
        const int64_t count = std::min(g.o, end * kGradChannels) - first;
        StagedImage in(g);
        Floats staged_dy(kGradChannels * g.oh * g.row, 0.0f);
        Floats acc(count * taps * L, 0.0f);
        for (int64_t n = 0; n < g.n; ++n) {
          in.stage(xs + n * g.c * g.ih * g.iw);
          in_blocks<kGradChannels>(
              count, GradFilterChannels{g, in, dys + n * g.o * g.oh * g.ow,
                                        staged_dy.data(), acc.data(), first});
        }
        for (int64_t k = 0; k < count * taps; ++k)
          dws[first * taps + k] =
              xsimd::hadd(B::load_aligned(acc.data() + k * L));
      });
}

}  // namespace tapeflow::cpu
