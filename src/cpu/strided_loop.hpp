#pragma once
// N-operand strided iteration over a LoopPlan: contiguous and broadcast data
// become long inner rows that the row functions vectorize; the outer space is
// split across threads.
#include <array>
#include <cstdint>

#include "core/loop_plan.hpp"
#include "cpu/parallel.hpp"
#include "tapeflow/core/tensor.hpp"

namespace tapeflow::cpu {

/**
 * Calls row(offsets, n, inner_strides) for each run of the flattened range
 * [begin, end); offsets are element offsets of each operand.
 */
template <size_t N, class Row>
void for_each_row(const LoopPlan<N>& p, int64_t begin, int64_t end, Row&& row) {
  const int r = p.rank;
  // Rank 2 (a row or column broadcast over a matrix, a transposed matrix)
  // walks its rows with the offsets in registers: the general walk below
  // keeps them in arrays indexed at run time, ~10 ns a row, which was most
  // of a 32 x 64 bias add.
  if (r == 2) {
    const int64_t cols = p.shape[1];
    std::array<int64_t, N> off, inner, outer;
    int64_t col = begin % cols;
    for (size_t k = 0; k < N; ++k) {
      inner[k] = p.strides[k][1];
      outer[k] = p.strides[k][0];
      off[k] = begin / cols * outer[k] + col * inner[k];
    }
    for (int64_t pos = begin; pos < end;) {
      const int64_t n = std::min(cols - col, end - pos);
      row(off, n, inner);
      pos += n;
      for (size_t k = 0; k < N; ++k) off[k] += outer[k] - col * inner[k];
      col = 0;
    }
    return;
  }
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
void run_elementwise(const Tensor& out,
                     const std::array<const Tensor*, N - 1>& in, Row&& row) {
  std::array<int64_t, N> flat;
  if (flat_elementwise<N>(out, in, flat)) {
    parallel_for(out.numel(), kParallelGrain, [&](int64_t b, int64_t e) {
      std::array<int64_t, N> off;
      for (size_t k = 0; k < N; ++k) off[k] = b * flat[k];
      row(off, e - b, flat);
    });
    return;
  }
  const LoopPlan<N> plan = plan_elementwise<N>(out, in);
  parallel_for(out.numel(), kParallelGrain,
               [&](int64_t b, int64_t e) { for_each_row(plan, b, e, row); });
}

/**
 * run_elementwise on the calling thread alone, for rows that allocate
 * (string_ elements) and so may throw: an exception must not leave an
 * OpenMP region.
 */
template <size_t N, class Row>
void run_elementwise_serial(const Tensor& out,
                            const std::array<const Tensor*, N - 1>& in,
                            Row&& row) {
  if (out.numel() == 0) return;
  std::array<int64_t, N> flat;
  if (flat_elementwise<N>(out, in, flat)) {
    row(std::array<int64_t, N>{}, out.numel(), flat);
    return;
  }
  for_each_row(plan_elementwise<N>(out, in), 0, out.numel(), row);
}

}  // namespace tapeflow::cpu
