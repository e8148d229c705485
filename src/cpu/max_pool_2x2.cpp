// float32 max pooling with 2x2 windows, stride 2 and no padding over plain
// NCHW, in xsimd batches along the rows of windows: its forward (with or
// without the workspace), the gradient's scatter and the second-order
// gather. Each pair of input rows (2 x W) pools into one output row, and the
// output rows of all planes form one contiguous run. A row of at least L
// windows takes batches of L (the last one overlapping its predecessor
// rather than running a scalar tail); a narrower row takes one batch whose
// surplus lanes read the rows that follow and write outputs that the next
// row pair overwrites, except near the end of a thread's planes, where the
// row pair goes through a zero-padded copy. Odd H and W leave a row and a
// column in no window.
//
// 1 thread, AVX2 build, against oneDNN 2.6's AVX-512 kernel on data already
// in its blocked nChw16c layout (its plain-layout kernel is several times
// slower): 64x32x28x28 forward 92 us (oneDNN 117), forward with the
// workspace plus the gradient 298 us (393); 64x64x14x14 49 us (66) and
// 135 us (172). See max_pool2d_* in the benchmarks.
#include <algorithm>
#include <utility>

#include "cpu/nn_direct.hpp"
#include "cpu/parallel.hpp"
#include "cpu/xsimd_config.hpp"

namespace tapeflow::cpu {
namespace {

using B = xsimd::batch<float>;
using Index = xsimd::batch<int32_t>;
using Lanes = xsimd::batch<uint32_t>;
constexpr int64_t L = B::size;

// x86 shuffles work within 128-bit blocks, so the one-instruction
// deinterleave below (shufps) leaves block j of its result holding the
// outputs 2j, 2j+1, L/2 + 2j and L/2 + 2j + 1. All per-window arithmetic runs
// in that order, and one permute per stored result restores the natural one:
// a full-width permute per input register, as xsimd's swizzle does, made the
// kernels shuffle-bound. unpacklo/unpackhi (xsimd's zip_lo/zip_hi on x86)
// interleave from the same order, which is what the scatter needs.

/** Output held by lane p of the block-wise order. */
struct Blockwise {
  static constexpr uint32_t get(uint32_t p, uint32_t n) {
    return (p % 4 < 2 ? 0 : n / 2 - 2) + 2 * (p / 4) + p % 4;
  }
};
/** Lane of the block-wise order that holds output o. */
struct Natural {
  static constexpr uint32_t get(uint32_t o, uint32_t n) {
    return o < n / 2 ? 4 * (o / 2) + o % 2 : 4 * ((o - n / 2) / 2) + 2 + o % 2;
  }
};

// The batch helpers are forced inline: GCC kept them out of line, and the
// batches then went through the stack (3x slower).

template <class V>
[[gnu::always_inline]] inline V to_natural(const V& v) {
  if constexpr (L == 4) return v;  // one block: already in order
  return xsimd::swizzle(v, xsimd::make_batch_constant<Lanes, Natural>());
}
template <class V>
[[gnu::always_inline]] inline V to_blockwise(const V& v) {
  if constexpr (L == 4) return v;
  return xsimd::swizzle(v, xsimd::make_batch_constant<Lanes, Blockwise>());
}

/**
 * Element of the pair (a, b) of 2n elements that lane i of the block-wise
 * deinterleave takes: an even one (kOdd 0) or an odd one (kOdd 1).
 */
template <int kOdd>
constexpr int deinterleaved(int i, int n) {
  return (i % 4 < 2 ? 0 : n) + 4 * (i / 4) + 2 * (i % 2) + kOdd;
}
/** One shuffle of a and b; for every width GCC emits a single shufps. */
template <int kOdd, size_t... I>
[[gnu::always_inline]] inline B take_half(const B& a, const B& b,
                                          std::index_sequence<I...>) {
  return B(
      __builtin_shufflevector(a.data, b.data, deinterleaved<kOdd>(I, L)...));
}

/** The even and the odd elements of p[0, 2L), in block-wise order. */
[[gnu::always_inline]] inline void deinterleave(const float* p, B& even,
                                                B& odd) {
  const B a = B::load_unaligned(p), b = B::load_unaligned(p + L);
  even = take_half<0>(a, b, std::make_index_sequence<L>());
  odd = take_half<1>(a, b, std::make_index_sequence<L>());
}

/** What a batch computes. */
enum class Pass { max, max_ws, gather };

/**
 * One batch of L windows whose rows start at r0 and r1. max: their maxima
 * (or first NaNs) into y; max_ws: also each maximum's index within its
 * window into ws (strict > keeps the first maximum); gather: the element at
 * index ws of each window into y.
 */
template <Pass kPass, class I>
[[gnu::always_inline]] inline void pool_batch(const float* r0, const float* r1,
                                              float* y, I* ws) {
  B e0, o0, e1, o1;
  deinterleave(r0, e0, o0);
  deinterleave(r1, e1, o1);
  B m = e0;
  if constexpr (kPass == Pass::max_ws) {
    // Without NaN (or an infinity beside its negative, which also sums to
    // NaN), the maxima as a tree and each index as its first element equal
    // to the maximum: half the instructions of the chain below. x86's
    // max(a, b) is a > b ? a : b, so a tie keeps the earlier element, and m
    // holds the bits (the sign of a zero) of the element k points at.
    if (!xsimd::any(xsimd::isnan((e0 + o0) + (e1 + o1)))) {
      m = xsimd::max(xsimd::max(o1, e1), xsimd::max(o0, e0));
      auto index = [](int32_t i) { return xsimd::bitwise_cast<B>(Index(i)); };
      B k = xsimd::select(e1 == m, index(2), index(3));
      k = xsimd::select(o0 == m, index(1), k);
      k = xsimd::select(e0 == m, index(0), k);
      xsimd::bitwise_cast<Index>(to_natural(k)).store_unaligned(ws);
      to_natural(m).store_unaligned(y);
      return;
    }
  }
  if constexpr (kPass == Pass::gather) {
    const B k =
        to_blockwise(xsimd::batch_cast<float>(Index::load_unaligned(ws)));
    m = xsimd::select(k == B(1.f), o0, m);
    m = xsimd::select(k == B(2.f), e1, m);
    m = xsimd::select(k == B(3.f), o1, m);
  } else {
    B k(0.f);
    // v is the window's new maximum when larger, or when it is the first NaN
    // (as argmax): not v <= m, unless m is already NaN (xsimd's compares are
    // ordered: false where either side is NaN).
    auto take = [&](const B& v, float i) {
      if constexpr (kPass == Pass::max_ws) {
        const auto wins = !(v <= m) & (m == m);
        k = xsimd::select(wins, B(i), k);
        m = xsimd::select(wins, v, m);
      } else {
        // x86's max(v, m) is v > m ? v : m, so a NaN m stays: one
        // instruction and a select for a NaN v.
        m = xsimd::select(xsimd::isnan(v), v, xsimd::max(v, m));
      }
    };
    take(o0, 1.f);
    take(e1, 2.f);
    take(o1, 3.f);
    if constexpr (kPass == Pass::max_ws)
      xsimd::batch_cast<int32_t>(to_natural(k)).store_unaligned(ws);
  }
  to_natural(m).store_unaligned(y);
}

/**
 * The gradient of one batch: dy[i] into the element ws[i] of window i, zeros
 * into the other three, over rows top and bottom (2L elements each). The
 * gradients are moved as int32 bits, so the masks come from integer
 * compares with no conversion of the indices.
 */
[[gnu::always_inline]] inline void scatter_batch(const float* dy,
                                                 const int32_t* ws, float* top,
                                                 float* bottom) {
  // xsimd's integer select is a byte blend, which GCC turns into two
  // instructions per select when one side is zero; an and of the compare's
  // mask, in GCC's vector extension, is one.
  using Lanes32 = int32_t __attribute__((vector_size(sizeof(Index))));
  const auto g = reinterpret_cast<Lanes32>(
      xsimd::bitwise_cast<Index>(to_blockwise(B::load_unaligned(dy))).data);
  const auto k =
      reinterpret_cast<Lanes32>(to_blockwise(Index::load_unaligned(ws)).data);
  auto at = [&](int32_t i) {
    return Index(reinterpret_cast<decltype(Index().data)>(g & (k == i)));
  };
  const Index t0 = at(0), t1 = at(1), b0 = at(2), b1 = at(3);
  auto store = [](float* p, const Index& v) {
    xsimd::bitwise_cast<B>(v).store_unaligned(p);
  };
  store(top, xsimd::zip_lo(t0, t1));
  store(top + L, xsimd::zip_hi(t0, t1));
  store(bottom, xsimd::zip_lo(b0, b1));
  store(bottom + L, xsimd::zip_hi(b0, b1));
}

/**
 * First output of the batch after the one at `o` in a row of `ow` outputs,
 * or -1 past the end.
 */
int64_t next_batch(int64_t o, int64_t ow) {
  return o + L >= ow ? -1 : std::min(o + L, ow - L);
}

/** Plane extents of the input (h, w) and of the output (oh, ow). */
struct Geo {
  int64_t planes, h, w, oh, ow;
  explicit Geo(const Shape& x)
      : planes(x[0] * x[1]), h(x[2]), w(x[3]), oh(x[2] / 2), ow(x[3] / 2) {}
};

/**
 * `count` consecutive row pairs, the first at input offset `in` and output
 * offset `out` (then every 2W and OW).
 */
struct Rows {
  int64_t in, out, count;
  /** One narrow row whose batch would reach past the thread's planes. */
  bool staged;
  /** The rows end a plane of odd H, whose last row is in no window. */
  bool plane_end;
};

/**
 * Calls f(Rows) over every row pair in order, planes in parallel. f keeps
 * what it uses by value, and each thread runs a local copy of it: xsimd's
 * stores may alias anything, so values behind a reference were reloaded
 * after every batch and row (1.5x slower).
 */
template <class F>
void over_row_pairs(const Geo& g, const F& f) {
  const int64_t plane_in = g.h * g.w, plane_out = g.oh * g.ow;
  parallel_for(g.planes, std::max<int64_t>(1, kParallelGrain / plane_in),
               [&f, g, plane_in, plane_out](int64_t p0, int64_t p1) {
                 F rows = f;
                 const int64_t w = g.w, ow = g.ow;
                 const int64_t in_end = p1 * plane_in, out_end = p1 * plane_out;
                 // With H even, the row pairs of consecutive planes are one
                 // run.
                 const bool odd = g.h % 2;
                 const int64_t runs = odd ? p1 - p0 : 1;
                 const int64_t pairs = odd ? g.oh : (p1 - p0) * g.oh;
                 for (int64_t r = 0; r < runs; ++r) {
                   const int64_t in = (p0 + r) * plane_in,
                                 out = (p0 + r) * plane_out;
                   // A batch reads 2L elements from each row and writes L
                   // outputs; the narrow rows from `direct` on would reach past
                   // the thread's planes.
                   auto reaches_out = [&](int64_t i) {
                     return ow < L && (in_end - (in + 2 * i * w) < w + 2 * L ||
                                       out_end - (out + i * ow) < L);
                   };
                   int64_t direct = pairs;
                   while (direct > 0 && reaches_out(direct - 1)) --direct;
                   if (direct > 0)
                     rows(Rows{in, out, direct, false, odd && direct == pairs});
                   for (int64_t i = direct; i < pairs; ++i)
                     rows(Rows{in + 2 * i * w, out + i * ow, 1, true,
                               odd && i == pairs - 1});
                 }
               });
}

/** The passes of pool_batch over x into y (I: const int32_t for gather). */
template <Pass kPass, class I>
void pool_rows(const float* x, float* y, I* ws, const Geo& g) {
  over_row_pairs(g, [x, y, ws, w = g.w, ow = g.ow](const Rows& q) {
    const float* top = x + q.in;
    int64_t out = q.out;
    if (!q.staged) {
      for (int64_t k = 0; k < q.count; ++k, top += 2 * w, out += ow)
        for (int64_t o = 0; o >= 0; o = next_batch(o, ow))
          pool_batch<kPass>(top + 2 * o, top + w + 2 * o, y + out + o,
                            kPass == Pass::max ? nullptr : ws + out + o);
      return;
    }
    // A narrow row (w < 2L) copied into zero-padded rows.
    alignas(64) float in[4 * L] = {}, y_copy[L];
    alignas(64) int32_t idx[L] = {};
    std::copy_n(top, w, in);
    std::copy_n(top + w, w, in + 2 * L);
    if constexpr (kPass == Pass::gather) std::copy_n(ws + out, ow, idx);
    pool_batch<kPass>(in, in + 2 * L, y_copy, idx);
    std::copy_n(y_copy, ow, y + out);
    if constexpr (kPass == Pass::max_ws) std::copy_n(idx, ow, ws + out);
  });
}

}  // namespace

bool max_pool_2x2_applies(const PoolWindow& w, const Shape& x, DType dtype) {
  return dtype == float32 && x.size() == 4 && w.ksize == Shape{2, 2} &&
         w.strides == Shape{2, 2} && w.pad_lo == Shape{0, 0} &&
         w.pad_hi == Shape{0, 0} && x[2] >= 2 && x[3] >= 2;
}

void max_pool_2x2(const float* x, float* y, int32_t* ws, const Shape& shape) {
  if (ws)
    pool_rows<Pass::max_ws>(x, y, ws, Geo(shape));
  else
    pool_rows<Pass::max>(x, y, ws, Geo(shape));
}

void max_pool_2x2_gather(const float* gx, const int32_t* ws, float* y,
                         const Shape& shape) {
  pool_rows<Pass::gather>(gx, y, ws, Geo(shape));
}

void max_pool_2x2_tf_argmax(const int32_t* ws, int64_t* argmax,
                            const Shape& shape, bool include_batch) {
  // Window element k = 2 dy + dx of output (oy, ox) in plane (n, c) is input
  // (2 oy + dy, 2 ox + dx), whose NHWC offset is ((n H + y) W + x) C + c.
  const Geo g(shape);
  const int64_t channels = shape[1], plane_out = g.oh * g.ow;
  parallel_for(
      g.planes, std::max<int64_t>(1, kParallelGrain / plane_out),
      [=](int64_t p0, int64_t p1) {
        for (int64_t p = p0; p < p1; ++p) {
          const int64_t n = p / channels;
          const int64_t base =
              p % channels + (include_batch ? n * g.h * g.w : 0) * channels;
          const int32_t* k = ws + p * plane_out;
          int64_t* out = argmax + p * plane_out;
          for (int64_t oy = 0; oy < g.oh; ++oy)
            for (int64_t ox = 0; ox < g.ow; ++ox) {
              const int32_t e = k[oy * g.ow + ox];
              out[oy * g.ow + ox] =
                  base +
                  ((2 * oy + (e >> 1)) * g.w + 2 * ox + (e & 1)) * channels;
            }
        }
      });
}

void max_pool_2x2_scatter(const float* dy, const int32_t* ws, float* dx,
                          const Shape& shape) {
  const Geo g(shape);
  over_row_pairs(g, [dy, ws, dx, w = g.w, ow = g.ow](const Rows& q) {
    float* top = dx + q.in;
    const float* grad = dy + q.out;
    const int32_t* idx = ws + q.out;
    for (int64_t k = 0; k < q.count; ++k, top += 2 * w, grad += ow, idx += ow) {
      float* bottom = top + w;
      if (!q.staged) {
        // A narrow row's surplus lanes write past its rows, into the next
        // row pair's, which is written after it.
        for (int64_t o = 0; o >= 0; o = next_batch(o, ow))
          scatter_batch(grad + o, idx + o, top + 2 * o, bottom + 2 * o);
      } else {
        alignas(64) float rows[4 * L], grad_copy[L] = {};
        alignas(64) int32_t idx_copy[L] = {};
        std::copy_n(grad, ow, grad_copy);
        std::copy_n(idx, ow, idx_copy);
        scatter_batch(grad_copy, idx_copy, rows, rows + 2 * L);
        std::copy_n(rows, w, top);
        std::copy_n(rows + 2 * L, w, bottom);
      }
      // The column in no window (odd W).
      if (w % 2) top[w - 1] = bottom[w - 1] = 0.f;
    }
    // The row in no window (odd H), just past the last row pair.
    if (q.plane_end) std::fill_n(top, w, 0.f);
  });
}

}  // namespace tapeflow::cpu
