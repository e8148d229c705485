#pragma once
// N-operand strided iteration: dimensions are coalesced where every operand
// allows it, so contiguous and broadcast data become long inner rows that the
// row functions vectorize; the outer space is split across threads.
#include <array>
#include <cstdint>

#include "cpu/parallel.hpp"
#include "tapeflow/core/tensor.hpp"

namespace tapeflow::cpu {

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

/**
 * Calls row(offsets, n, inner_strides) for each run of the flattened range
 * [begin, end); offsets are element offsets of each operand.
 */
template <size_t N, class Row>
void for_each_row(const LoopPlan<N>& p, int64_t begin, int64_t end, Row&& row) {
  const int r = p.rank;
  std::array<int64_t, kMaxRank> idx{};
  std::array<int64_t, N> off{};
  int64_t rem = begin;
  for (int d = r - 1; d >= 0; --d) {
    idx[d] = rem % p.shape[d];
    rem /= p.shape[d];
    for (size_t k = 0; k < N; ++k) off[k] += idx[d] * p.strides[k][d];
  }
  std::array<int64_t, N> inner{};
  for (size_t k = 0; k < N; ++k) inner[k] = p.strides[k][r - 1];
  int64_t pos = begin;
  while (pos < end) {
    const int64_t n = std::min(p.shape[r - 1] - idx[r - 1], end - pos);
    row(off, n, inner);
    pos += n;
    idx[r - 1] += n;
    for (size_t k = 0; k < N; ++k) off[k] += n * inner[k];
    for (int d = r - 1; d > 0 && idx[d] == p.shape[d]; --d) {
      for (size_t k = 0; k < N; ++k) off[k] -= idx[d] * p.strides[k][d];
      idx[d] = 0;
      ++idx[d - 1];
      for (size_t k = 0; k < N; ++k) off[k] += p.strides[k][d - 1];
    }
  }
}

/** Plans and runs `row` over out = f(inputs...), in parallel when large. */
template <size_t N, class Row>
void run_elementwise(const Tensor& out, const std::array<const Tensor*, N - 1>& in,
                     Row&& row) {
  // Fast path: every operand contiguous with the output's shape, one row.
  bool flat = out.is_contiguous();
  for (size_t k = 0; flat && k + 1 < N; ++k)
    flat = in[k]->shape() == out.shape() && in[k]->is_contiguous();
  if (flat) {
    std::array<int64_t, N> ones;
    ones.fill(1);
    parallel_for(out.numel(), kParallelGrain, [&](int64_t b, int64_t e) {
      std::array<int64_t, N> off;
      off.fill(b);
      row(off, e - b, ones);
    });
    return;
  }
  std::array<std::array<int64_t, kMaxRank>, N> st{};
  st[0] = broadcast_strides(out, out.shape());
  for (size_t k = 1; k < N; ++k) st[k] = broadcast_strides(*in[k - 1], out.shape());
  const LoopPlan<N> plan = make_plan<N>(out.shape(), st);
  parallel_for(out.numel(), kParallelGrain, [&](int64_t b, int64_t e) {
    for_each_row(plan, b, e, row);
  });
}

}  // namespace tapeflow::cpu
