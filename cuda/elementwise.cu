// Elementwise kernels: unary and binary math, comparisons, logical ops,
// where, cast (also the strided copy behind contiguous()) and fill.
#include <algorithm>

#include "core/convert_value.hpp"
#include "core/dtype_dispatch.hpp"
#include "elementwise.cuh"
#include "functors.cuh"
#include "ops/elementwise_ops.hpp"

namespace tapeflow::cuda {
namespace {

// Each body writes one element through operator()(offsets) and, for the
// vector paths (elementwise.cuh), kWidth elements through vector(off, mask);
// set_operand points an input elsewhere (a transposed tile in shared memory).

template <class F, class R, class T>
struct UnaryBody {
  static constexpr int kWidth = vector_width(std::max(sizeof(R), sizeof(T)));
  F f;
  R* o;
  const T* a;
  __device__ void operator()(const int64_t* off) const {
    o[off[0]] = f(a[off[1]]);
  }
  __device__ void vector(const int64_t* off, uint32_t broadcast) const {
    const Pack<T, kWidth> x = load_pack<kWidth>(a, off[1], broadcast & 2u);
    Pack<R, kWidth> y;
#pragma unroll
    for (int j = 0; j < kWidth; ++j) y.v[j] = f(x.v[j]);
    store_pack<kWidth>(o, off[0], y);
  }
  __device__ void set_operand(int, const void* p) {
    a = static_cast<const T*>(p);
  }
  std::array<OperandAddress, 2> addresses() const {
    return {{{o, sizeof(R)}, {a, sizeof(T)}}};
  }
};
template <class F, class R, class T>
struct BinaryBody {
  static constexpr int kWidth = vector_width(std::max(sizeof(R), sizeof(T)));
  F f;
  R* o;
  const T* a;
  const T* b;
  __device__ void operator()(const int64_t* off) const {
    o[off[0]] = f(a[off[1]], b[off[2]]);
  }
  __device__ void vector(const int64_t* off, uint32_t broadcast) const {
    const Pack<T, kWidth> x = load_pack<kWidth>(a, off[1], broadcast & 2u);
    const Pack<T, kWidth> z = load_pack<kWidth>(b, off[2], broadcast & 4u);
    Pack<R, kWidth> y;
#pragma unroll
    for (int j = 0; j < kWidth; ++j) y.v[j] = f(x.v[j], z.v[j]);
    store_pack<kWidth>(o, off[0], y);
  }
  __device__ void set_operand(int k, const void* p) {
    (k == 1 ? a : b) = static_cast<const T*>(p);
  }
  std::array<OperandAddress, 3> addresses() const {
    return {{{o, sizeof(R)}, {a, sizeof(T)}, {b, sizeof(T)}}};
  }
};
template <class T>
struct WhereBody {
  static constexpr int kWidth = vector_width(sizeof(T));
  T* o;
  const uint8_t* c;
  const T* a;
  const T* b;
  __device__ void operator()(const int64_t* off) const {
    o[off[0]] = c[off[1]] ? a[off[2]] : b[off[3]];
  }
  __device__ void vector(const int64_t* off, uint32_t broadcast) const {
    const Pack<uint8_t, kWidth> m =
        load_pack<kWidth>(c, off[1], broadcast & 2u);
    const Pack<T, kWidth> x = load_pack<kWidth>(a, off[2], broadcast & 4u);
    const Pack<T, kWidth> z = load_pack<kWidth>(b, off[3], broadcast & 8u);
    Pack<T, kWidth> y;
#pragma unroll
    for (int j = 0; j < kWidth; ++j) y.v[j] = m.v[j] ? x.v[j] : z.v[j];
    store_pack<kWidth>(o, off[0], y);
  }
  __device__ void set_operand(int k, const void* p) {
    if (k == 1)
      c = static_cast<const uint8_t*>(p);
    else
      (k == 2 ? a : b) = static_cast<const T*>(p);
  }
  std::array<OperandAddress, 4> addresses() const {
    return {{{o, sizeof(T)}, {c, 1}, {a, sizeof(T)}, {b, sizeof(T)}}};
  }
};
template <class To, class From>
struct CastBody {
  static constexpr int kWidth =
      vector_width(std::max(sizeof(To), sizeof(From)));
  To* o;
  const From* a;
  __device__ void operator()(const int64_t* off) const {
    o[off[0]] = convert_value<To>(a[off[1]]);
  }
  __device__ void vector(const int64_t* off, uint32_t broadcast) const {
    const Pack<From, kWidth> x = load_pack<kWidth>(a, off[1], broadcast & 2u);
    Pack<To, kWidth> y;
#pragma unroll
    for (int j = 0; j < kWidth; ++j) y.v[j] = convert_value<To>(x.v[j]);
    store_pack<kWidth>(o, off[0], y);
  }
  __device__ void set_operand(int, const void* p) {
    a = static_cast<const From*>(p);
  }
  std::array<OperandAddress, 2> addresses() const {
    return {{{o, sizeof(To)}, {a, sizeof(From)}}};
  }
};
template <class T>
struct FillBody {
  static constexpr int kWidth = vector_width(sizeof(T));
  T* o;
  T v;
  __device__ void operator()(const int64_t* off) const { o[off[0]] = v; }
  __device__ void vector(const int64_t* off, uint32_t) const {
    Pack<T, kWidth> y;
#pragma unroll
    for (int j = 0; j < kWidth; ++j) y.v[j] = v;
    store_pack<kWidth>(o, off[0], y);
  }
  std::array<OperandAddress, 1> addresses() const {
    return {{{o, sizeof(T)}}};
  }
};

template <class T>
T* ptr(const Tensor& t) {
  return static_cast<T*>(t.raw_data());
}

template <class R, class T, class F>
void unary(const Tensor& x, Tensor& out, F f) {
  launch_elementwise<2>(out, {&x},
                        UnaryBody<F, R, T>{f, ptr<R>(out), ptr<T>(x)});
}
template <class R, class T, class F>
void binary(const Tensor& x, const Tensor& y, Tensor& out, F f) {
  launch_elementwise<3>(
      out, {&x, &y}, BinaryBody<F, R, T>{f, ptr<R>(out), ptr<T>(x), ptr<T>(y)});
}

template <class Op, class F>
void floating_unary(const Op&, Inputs in, const Outputs& outs) {
  Tensor& out = outs[0];
  dispatch_floating(in[0].dtype(), Op::name, [&](auto tag) {
    using T = decltype(tag);
    unary<T, T>(in[0], out, F{});
  });
}
template <class Op, class F>
void numeric_unary(const Op&, Inputs in, const Outputs& outs) {
  Tensor& out = outs[0];
  dispatch_numeric(in[0].dtype(), Op::name, [&](auto tag) {
    using T = decltype(tag);
    unary<T, T>(in[0], out, F{});
  });
}
void logical_not(const LogicalNot&, Inputs in, const Outputs& outs) {
  Tensor& out = outs[0];
  unary<uint8_t, uint8_t>(in[0], out, NotF{});
}

template <class Op, class F>
void arithmetic(const Op&, Inputs in, const Outputs& outs) {
  Tensor& out = outs[0];
  dispatch_numeric(in[0].dtype(), Op::name, [&](auto tag) {
    using T = decltype(tag);
    binary<T, T>(in[0], in[1], out, F{});
  });
}
template <class Op, class F>
void floating_binary(const Op&, Inputs in, const Outputs& outs) {
  Tensor& out = outs[0];
  dispatch_floating(in[0].dtype(), Op::name, [&](auto tag) {
    using T = decltype(tag);
    binary<T, T>(in[0], in[1], out, F{});
  });
}
template <class Op, class F>
void compare(const Op&, Inputs in, const Outputs& outs) {
  Tensor& out = outs[0];
  dispatch_all(in[0].dtype(), Op::name, [&](auto tag) {
    binary<uint8_t, decltype(tag)>(in[0], in[1], out, F{});
  });
}
template <class Op, class F>
void logical(const Op&, Inputs in, const Outputs& outs) {
  Tensor& out = outs[0];
  binary<uint8_t, uint8_t>(in[0], in[1], out, F{});
}

void where(const Where&, Inputs in, const Outputs& outs) {
  Tensor& out = outs[0];
  dispatch_all(in[1].dtype(), Where::name, [&](auto tag) {
    using T = decltype(tag);
    launch_elementwise<4>(out, {&in[0], &in[1], &in[2]},
                          WhereBody<T>{ptr<T>(out), ptr<uint8_t>(in[0]),
                                       ptr<T>(in[1]), ptr<T>(in[2])});
  });
}

void cast(const Cast&, Inputs in, const Outputs& outs) {
  Tensor& out = outs[0];
  dispatch_all(in[0].dtype(), Cast::name, [&](auto from) {
    dispatch_all(out.dtype(), Cast::name, [&](auto to) {
      using From = decltype(from);
      using To = decltype(to);
      launch_elementwise<2>(out, {&in[0]},
                            CastBody<To, From>{ptr<To>(out), ptr<From>(in[0])});
    });
  });
}

void full(const Full& op, Inputs, const Outputs& outs) {
  Tensor& out = outs[0];
  dispatch_all(out.dtype(), Full::name, [&](auto tag) {
    using T = decltype(tag);
    // As the CPU converts it (fill.cpp): NaN and out-of-range values into
    // an integer dtype are no undefined cast.
    const T v = convert_value<T>(op.value);
    launch_elementwise<1>(out, {}, FillBody<T>{ptr<T>(out), v});
  });
}

}  // namespace

void register_elementwise(Registry& r) {
  constexpr auto gpu = DeviceType::cuda;
  r.set<Neg>(gpu, numeric_unary<Neg, NegF>, "cuda");
  r.set<Exp>(gpu, floating_unary<Exp, ExpF>, "cuda");
  r.set<Log>(gpu, floating_unary<Log, LogF>, "cuda");
  r.set<Sqrt>(gpu, floating_unary<Sqrt, SqrtF>, "cuda");
  r.set<Rsqrt>(gpu, floating_unary<Rsqrt, RsqrtF>, "cuda");
  r.set<Abs>(gpu, numeric_unary<Abs, AbsF>, "cuda");
  r.set<Sign>(gpu, numeric_unary<Sign, SignF>, "cuda");
  r.set<Square>(gpu, numeric_unary<Square, SquareF>, "cuda");
  r.set<Sin>(gpu, floating_unary<Sin, SinF>, "cuda");
  r.set<Cos>(gpu, floating_unary<Cos, CosF>, "cuda");
  r.set<Tanh>(gpu, floating_unary<Tanh, TanhF>, "cuda");
  r.set<Sigmoid>(gpu, floating_unary<Sigmoid, SigmoidF>, "cuda");
  r.set<Relu>(gpu, numeric_unary<Relu, ReluF>, "cuda");
  r.set<Expm1>(gpu, floating_unary<Expm1, Expm1F>, "cuda");
  r.set<Log1p>(gpu, floating_unary<Log1p, Log1pF>, "cuda");
  r.set<Erf>(gpu, floating_unary<Erf, ErfF>, "cuda");
  r.set<Atan>(gpu, floating_unary<Atan, AtanF>, "cuda");
  r.set<Floor>(gpu, floating_unary<Floor, FloorF>, "cuda");
  r.set<Ceil>(gpu, floating_unary<Ceil, CeilF>, "cuda");
  r.set<Round>(gpu, floating_unary<Round, RoundF>, "cuda");
  r.set<LogicalNot>(gpu, logical_not, "cuda");
  r.set<Add>(gpu, arithmetic<Add, AddF>, "cuda");
  r.set<Sub>(gpu, arithmetic<Sub, SubF>, "cuda");
  r.set<Mul>(gpu, arithmetic<Mul, MulF>, "cuda");
  r.set<Div>(gpu, floating_binary<Div, DivF>, "cuda");
  r.set<Pow>(gpu, floating_binary<Pow, PowF>, "cuda");
  r.set<FloorDiv>(gpu, arithmetic<FloorDiv, FloorDivF>, "cuda");
  r.set<FloorMod>(gpu, arithmetic<FloorMod, FloorModF>, "cuda");
  r.set<Atan2>(gpu, floating_binary<Atan2, Atan2F>, "cuda");
  r.set<Minimum>(gpu, arithmetic<Minimum, MinF>, "cuda");
  r.set<Maximum>(gpu, arithmetic<Maximum, MaxF>, "cuda");
  r.set<ReluGrad>(gpu, arithmetic<ReluGrad, ReluGradF>, "cuda");
  r.set<TanhGrad>(gpu, floating_binary<TanhGrad, TanhGradF>, "cuda");
  r.set<SigmoidGrad>(gpu, floating_binary<SigmoidGrad, SigmoidGradF>, "cuda");
  r.set<Equal>(gpu, compare<Equal, EqF>, "cuda");
  r.set<NotEqual>(gpu, compare<NotEqual, NeF>, "cuda");
  r.set<Less>(gpu, compare<Less, LtF>, "cuda");
  r.set<LessEqual>(gpu, compare<LessEqual, LeF>, "cuda");
  r.set<Greater>(gpu, compare<Greater, GtF>, "cuda");
  r.set<GreaterEqual>(gpu, compare<GreaterEqual, GeF>, "cuda");
  r.set<LogicalAnd>(gpu, logical<LogicalAnd, AndF>, "cuda");
  r.set<LogicalOr>(gpu, logical<LogicalOr, OrF>, "cuda");
  r.set<Where>(gpu, where, "cuda");
  r.set<Cast>(gpu, cast, "cuda");
  r.set<Full>(gpu, full, "cuda");
}

}  // namespace tapeflow::cuda
