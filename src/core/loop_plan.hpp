#pragma once
// The iteration space of an elementwise op, shared by the CPU and CUDA
// backends: dimensions are coalesced wherever every operand allows it, so
// contiguous and broadcast operands become a few long rows.
#include <array>
#include <cstdint>

#include "tapeflow/core/tensor.hpp"

namespace tapeflow {

template <size_t N>
struct LoopPlan {
  int rank = 0;
  std::array<int64_t, kMaxRank> shape{};
  std::array<std::array<int64_t, kMaxRank>, N> strides{};  // per operand
};

/** Strides of `t` seen in `shape` coordinates (0 along broadcast axes). */
inline std::array<int64_t, kMaxRank> broadcast_strides(const Tensor& t,
                                                       const Shape& shape) {
  std::array<int64_t, kMaxRank> st{};
  const int64_t lead = shape.size() - t.rank();
  for (int64_t i = 0; i < t.rank(); ++i)
    st[lead + i] = t.shape()[i] == 1 ? 0 : t.strides()[i];
  return st;
}

/** Operand 0 is the output; all operands are iterated over `shape`. */
template <size_t N>
LoopPlan<N> make_plan(const Shape& shape,
                      const std::array<std::array<int64_t, kMaxRank>, N>& st) {
  LoopPlan<N> p;
  for (int64_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 1) continue;
    if (p.rank > 0) {
      bool merge = true;
      for (size_t k = 0; k < N; ++k)
        merge &= p.strides[k][p.rank - 1] == st[k][i] * shape[i];
      if (merge) {
        p.shape[p.rank - 1] *= shape[i];
        for (size_t k = 0; k < N; ++k) p.strides[k][p.rank - 1] = st[k][i];
        continue;
      }
    }
    p.shape[p.rank] = shape[i];
    for (size_t k = 0; k < N; ++k) p.strides[k][p.rank] = st[k][i];
    ++p.rank;
  }
  if (p.rank == 0) {  // a single element
    p.rank = 1;
    p.shape[0] = 1;
  }
  return p;
}

/** The plan of out = f(inputs...), all iterated over out's shape. */
template <size_t N>
LoopPlan<N> plan_elementwise(const Tensor& out,
                             const std::array<const Tensor*, N - 1>& in) {
  std::array<std::array<int64_t, kMaxRank>, N> st{};
  st[0] = broadcast_strides(out, out.shape());
  for (size_t k = 1; k < N; ++k)
    st[k] = broadcast_strides(*in[k - 1], out.shape());
  return make_plan<N>(out.shape(), st);
}

/**
 * When out is contiguous and every input is either contiguous with out's
 * shape or a single element, the whole op is one flat row: fills `stride`
 * (1, or 0 for single elements) and returns true.
 */
template <size_t N>
bool flat_elementwise(const Tensor& out,
                      const std::array<const Tensor*, N - 1>& in,
                      std::array<int64_t, N>& stride) {
  // Every tensor here is defined (the op's inference read them all).
  const TensorImpl& o = *out.impl();
  if (!o.contiguous) return false;
  stride[0] = 1;
  int64_t out_numel = -1;  // counted only when an input's shape differs
  for (size_t k = 0; k + 1 < N; ++k) {
    const TensorImpl& t = *in[k]->impl();
    if (t.shape == o.shape) {
      // A single element is always contiguous, so nothing broadcasts here.
      if (!t.contiguous) return false;
      stride[k + 1] = 1;
      continue;
    }
    if (out_numel < 0) out_numel = o.shape.numel();
    if (t.shape.numel() != 1 || out_numel == 1) return false;
    stride[k + 1] = 0;
  }
  return true;
}

}  // namespace tapeflow
