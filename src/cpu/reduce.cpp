// Reductions. Reduced axes that form one contiguous run are reduced with
// xsimd batches; reductions over outer axes accumulate contiguous rows;
// reduced axes that end in a contiguous run (N, H, W of NCHW) reduce the runs
// in place; any other layout is first transposed into the first form. max
// and min are NaN when a NaN is reduced; argmax and argmin then give the
// first NaN's index (NumPy's and PyTorch's rule).
#include <limits>

#include "core/creation_internal.hpp"
#include "core/dtype_dispatch.hpp"
#include "core/op_error.hpp"
#include "cpu/functors.hpp"
#include "cpu/strided_loop.hpp"
#include "cpu/xsimd_config.hpp"
#include "ops/reduce_ops.hpp"
#include "tapeflow/ops/shape.hpp"

namespace tapeflow::cpu {
namespace {

template <class T>
struct SumR {
  static T identity() { return T(0); }
  template <class V>
  static V combine(const V& a, const V& b) {
    return AddF{}(a, b);  // integers wrap, as NumPy's sum
  }
};
template <class T>
struct ProdR {
  static T identity() { return T(1); }
  template <class V>
  static V combine(const V& a, const V& b) {
    return MulF{}(a, b);
  }
};
template <class T>
struct MaxR {
  // -inf for floats (the max of nothing, as in TensorFlow), else the lowest.
  static T identity() {
    using L = std::numeric_limits<T>;
    return L::has_infinity ? -L::infinity() : L::lowest();
  }
  template <class V>
  static V combine(const V& a, const V& b) {
    // Batches: x86's max(b, a) keeps a NaN a and a NaN b is selected, two
    // instructions on the accumulator's path where MaxF has three.
    if constexpr (std::is_arithmetic_v<V>)
      return MaxF{}(a, b);
    else
      return xsimd::select(xsimd::isnan(b), b, xsimd::max(b, a));
  }
};
template <class T>
struct MinR {
  static T identity() {
    using L = std::numeric_limits<T>;
    return L::has_infinity ? L::infinity() : L::max();
  }
  template <class V>
  static V combine(const V& a, const V& b) {
    if constexpr (std::is_arithmetic_v<V>)
      return MinF{}(a, b);
    else  // as MaxR
      return xsimd::select(xsimd::isnan(b), b, xsimd::min(b, a));
  }
};

/**
 * count_nonzero: int64 counts of any input type. `fold` takes in an element,
 * `combine` merges counts.
 */
struct CountR {
  static int64_t identity() { return 0; }
  static int64_t combine(int64_t a, int64_t b) { return a + b; }
  template <class In>
  static int64_t fold(int64_t acc, In x) {
    return acc + (x != In(0));  // NaN counts, -0 does not
  }
};

/** acc with element x taken in: R::fold where R has one, else combine. */
template <class R, class T, class In>
T fold(T acc, In x) {
  if constexpr (requires { R::fold(acc, x); })
    return R::fold(acc, x);
  else
    return R::combine(acc, x);
}

template <class T>
inline constexpr bool kSimd =
    std::is_same_v<T, float> || std::is_same_v<T, double>;

/** The accumulator type of R (T for the numeric reducers). */
template <class R>
using Acc = decltype(R::identity());

/**
 * Counts the nonzero elements of a run. Blocks of 2^16 are counted in 32
 * bits, which g++ vectorizes for every element type (a bool_ run at 32 per
 * AVX2 compare); their counts are added in 64.
 */
template <class In>
int64_t count_run(const In* p, int64_t n) {
  constexpr int64_t kBlock = int64_t{1} << 16;
  int64_t total = 0;
  for (int64_t b = 0; b < n; b += kBlock) {
    const int64_t e = std::min(n, b + kBlock);
    uint32_t count = 0;
    for (int64_t i = b; i < e; ++i) count += p[i] != In(0);
    total += count;
  }
  return total;
}

/** Reduces n contiguous elements. */
template <class R, class In>
Acc<R> reduce_run(const In* p, int64_t n) {
  using T = Acc<R>;
  if constexpr (std::is_same_v<R, CountR>) {
    return count_run(p, n);
  }
  int64_t i = 0;
  T acc = R::identity();
  if constexpr (kSimd<T> && std::is_same_v<In, T>) {
    using B = xsimd::batch<T>;
    constexpr int64_t W = B::size;
    if (n >= 4 * W) {  // four accumulators hide the add latency
      B a0(R::identity()), a1(a0), a2(a0), a3(a0);
      for (; i + 4 * W <= n; i += 4 * W) {
        a0 = R::combine(a0, B::load_unaligned(p + i));
        a1 = R::combine(a1, B::load_unaligned(p + i + W));
        a2 = R::combine(a2, B::load_unaligned(p + i + 2 * W));
        a3 = R::combine(a3, B::load_unaligned(p + i + 3 * W));
      }
      alignas(64) T lanes[W];
      R::combine(R::combine(a0, a1), R::combine(a2, a3)).store_aligned(lanes);
      for (int64_t k = 0; k < W; ++k) acc = R::combine(acc, lanes[k]);
    }
  }
  for (; i < n; ++i) acc = fold<R>(acc, p[i]);
  return acc;
}

/** out[k] takes in in[k], for k in [0, n). */
template <class R, class In>
void combine_row(Acc<R>* out, const In* in, int64_t n) {
  using T = Acc<R>;
  int64_t i = 0;
  if constexpr (kSimd<T> && std::is_same_v<In, T>) {
    using B = xsimd::batch<T>;
    for (; i + int64_t(B::size) <= n; i += B::size)
      R::combine(B::load_unaligned(out + i), B::load_unaligned(in + i))
          .store_unaligned(out + i);
  }
  for (; i < n; ++i) out[i] = fold<R>(out[i], in[i]);
}

struct Split {
  Shape kept_shape, kept_strides, red_shape, red_strides;
};

Split split_axes(const Tensor& x, const ReduceOp& op) {
  Split s;
  for (int64_t i = 0; i < x.rank(); ++i) {
    Shape& sh = op.reduces(i) ? s.red_shape : s.kept_shape;
    Shape& st = op.reduces(i) ? s.red_strides : s.kept_strides;
    sh.push_back(x.shape()[i]);
    st.push_back(x.strides()[i]);
  }
  return s;
}

bool dense(const Shape& shape, const Shape& strides) {
  int64_t expected = 1;
  for (int64_t i = shape.size() - 1; i >= 0; --i) {
    if (shape[i] != 1 && strides[i] != expected) return false;
    expected *= shape[i];
  }
  return true;
}

/** Offsets of every element of a (shape, strides) block, in row-major order. */
template <class Fn>
void for_each_offset(const Shape& shape, const Shape& strides, Fn&& fn) {
  const int64_t n = shape.numel();
  std::array<int64_t, kMaxRank> idx{};
  int64_t off = 0;
  for (int64_t k = 0; k < n; ++k) {
    fn(k, off);
    for (int64_t d = shape.size() - 1; d >= 0; --d) {
      off += strides[d];
      if (++idx[d] < shape[d]) break;
      off -= strides[d] * shape[d];
      idx[d] = 0;
    }
  }
}

/** Shortest contiguous run of reduced elements reduced in place. */
constexpr int64_t kMinInPlaceRun = 16;

/** Reduces input of element type In into out (R's accumulator type). */
template <class R, class In>
void reduce_kernel(const ReduceOp& op, const Tensor& input, Tensor& out) {
  using T = Acc<R>;
  Split s = split_axes(input, op);
  Tensor x = input;
  if (!dense(s.red_shape, s.red_strides) &&
      !dense(s.kept_shape, s.kept_strides)) {
    // Reduced axes ending in a contiguous run (N, H, W of NCHW): each output
    // combines its runs in place, without the transposed copy below.
    int64_t j = s.red_shape.size(), run = 1;
    for (; j > 0; --j) {
      const int64_t i = j - 1;
      if (s.red_shape[i] != 1 && s.red_strides[i] != run) break;
      run *= s.red_shape[i];
    }
    if (run >= kMinInPlaceRun) {
      Shape outer_shape, outer_strides;
      for (int64_t i = 0; i < j; ++i) {
        outer_shape.push_back(s.red_shape[i]);
        outer_strides.push_back(s.red_strides[i]);
      }
      const In* in = static_cast<const In*>(x.raw_data());
      T* o = static_cast<T*>(out.raw_data());
      const int64_t K = s.kept_shape.numel(), N = s.red_shape.numel();
      std::vector<int64_t> base(static_cast<size_t>(K));
      for_each_offset(s.kept_shape, s.kept_strides,
                      [&](int64_t k, int64_t off) { base[k] = off; });
      parallel_for(
          K, std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(N, 1)),
          [&](int64_t b, int64_t e) {
            for (int64_t k = b; k < e; ++k) {
              T acc = R::identity();
              for_each_offset(
                  outer_shape, outer_strides, [&](int64_t, int64_t off) {
                    acc =
                        R::combine(acc, reduce_run<R>(in + base[k] + off, run));
                  });
              o[k] = acc;
            }
          });
      return;
    }
    std::vector<int64_t> perm;
    for (int64_t i = 0; i < x.rank(); ++i)
      if (!op.reduces(i)) perm.push_back(i);
    for (int64_t a : op.axes) perm.push_back(a);
    x = materialize(transpose(input, perm));
    ReduceOp moved;
    for (int64_t a = x.rank() - op.axes.size(); a < x.rank(); ++a)
      moved.axes.push_back(a);
    s = split_axes(x, moved);
  }
  const In* in = static_cast<const In*>(x.raw_data());
  T* o = static_cast<T*>(out.raw_data());
  const int64_t K = s.kept_shape.numel(), N = s.red_shape.numel();

  if (dense(s.red_shape, s.red_strides)) {
    // Each output reduces one contiguous run of N elements.
    std::vector<int64_t> base(static_cast<size_t>(K));
    for_each_offset(s.kept_shape, s.kept_strides,
                    [&](int64_t k, int64_t off) { base[k] = off; });
    if (K == 1 && N > kParallelGrain) {
      // Fixed blocks folded in order: the sum depends on N only, not on the
      // thread count, so runs with different intra_op_threads agree bit for
      // bit (distributed determinism relies on it).
      const int64_t blocks = (N + kParallelGrain - 1) / kParallelGrain;
      std::vector<T> partial(static_cast<size_t>(blocks));
      parallel_for(blocks, 1, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) {
          const int64_t begin = i * kParallelGrain;
          partial[i] = reduce_run<R>(in + base[0] + begin,
                                     std::min(kParallelGrain, N - begin));
        }
      });
      T acc = R::identity();
      for (T p : partial) acc = R::combine(acc, p);
      o[0] = acc;
      return;
    }
    parallel_for(K,
                 std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(N, 1)),
                 [&](int64_t b, int64_t e) {
                   for (int64_t k = b; k < e; ++k)
                     o[k] = reduce_run<R>(in + base[k], N);
                 });
    return;
  }
  // Kept axes are contiguous: accumulate whole rows of K outputs.
  parallel_for(
      K, std::max<int64_t>(64, kParallelGrain / std::max<int64_t>(N, 1)),
      [&](int64_t b, int64_t e) {
        std::fill(o + b, o + e, R::identity());
        for_each_offset(s.red_shape, s.red_strides, [&](int64_t, int64_t off) {
          combine_row<R>(o + b, in + off + b, e - b);
        });
      });
}

template <template <class> class R, class Op>
void reduce(const Op& op, Inputs in, const Outputs& outs) {
  Tensor& out = outs[0];
  dispatch_numeric(in[0].dtype(), Op::name, [&](auto tag) {
    using T = decltype(tag);
    reduce_kernel<R<T>, T>(op, in[0], out);
  });
}

void count_nonzero(const CountNonzero& op, Inputs in, const Outputs& outs) {
  dispatch_all(in[0].dtype(), CountNonzero::name, [&](auto tag) {
    reduce_kernel<CountR, decltype(tag)>(op, in[0], outs[0]);
  });
}

/** Whether v replaces best as the first maximum: a larger value or the first
 * NaN. */
struct BeatsMax {
  template <class T>
  bool operator()(T v, T best) const {
    return v > best || (v != v && best == best);
  }
};
struct BeatsMin {
  template <class T>
  bool operator()(T v, T best) const {
    return v < best || (v != v && best == best);
  }
};

template <class Better, class Op>
void arg_reduce(const Op& op, Inputs in, const Outputs& outs) {
  Tensor& out = outs[0];
  const Tensor& x = in[0];
  dispatch_numeric(x.dtype(), Op::name, [&](auto tag) {
    using T = decltype(tag);
    Shape rest_shape, rest_strides;
    for (int64_t i = 0; i < x.rank(); ++i) {
      if (i == op.axis) continue;
      rest_shape.push_back(x.shape()[i]);
      rest_strides.push_back(x.strides()[i]);
    }
    const T* p = static_cast<const T*>(x.raw_data());
    int64_t* o = static_cast<int64_t*>(out.raw_data());
    const int64_t n = x.shape()[op.axis], step = x.strides()[op.axis];
    for_each_offset(rest_shape, rest_strides, [&](int64_t k, int64_t off) {
      int64_t best = 0;
      for (int64_t j = 1; j < n; ++j)
        if (Better{}(p[off + j * step], p[off + best * step])) best = j;
      o[k] = best;
    });
  });
}

}  // namespace

void register_reduce(Registry& r) {
  constexpr auto cpu = DeviceType::cpu;
  r.set<Sum>(cpu, reduce<SumR, Sum>, "xsimd");
  r.set<Prod>(cpu, reduce<ProdR, Prod>, "xsimd");
  r.set<Max>(cpu, reduce<MaxR, Max>, "xsimd");
  r.set<Min>(cpu, reduce<MinR, Min>, "xsimd");
  r.set<CountNonzero>(cpu, count_nonzero, "cpu");
  r.set<ArgMax>(cpu, arg_reduce<BeatsMax, ArgMax>, "xsimd");
  r.set<ArgMin>(cpu, arg_reduce<BeatsMin, ArgMin>, "xsimd");
}

}  // namespace tapeflow::cpu
