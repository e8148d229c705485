#pragma once
// N-operand strided iteration over a LoopPlan: contiguous and broadcast data
// become long inner rows that the row functions vectorize; the outer space is
// split across threads.
#include <algorithm>
#include <array>
#include <cstdint>

#include "core/loop_plan.hpp"
#include "cpu/parallel.hpp"
#include "tapeflow/core/tensor.hpp"

namespace tapeflow::cpu {

/**
 * Calls row(offsets, n, inner_strides) for each run of the flattened range
 * [begin, end); offsets are element offsets of each operand, from `base`.
 */
template <size_t N, class Row>
void for_each_row(const LoopPlan<N>& p, int64_t begin, int64_t end, Row&& row,
                  const std::array<int64_t, N>& base = {}) {
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
      off[k] = base[k] + begin / cols * outer[k] + col * inner[k];
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
  std::array<int64_t, N> off = base;
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

/** The side of the tiles that reads_across loops walk. */
inline constexpr int64_t kTile = 32;

/**
 * Whether the loop reads an input across its contiguous axis (stride 1
 * along the second-to-last axis and not along the last: a transposed
 * matrix) into rows of the output, over planes too large to stay in the
 * cache row after row. Such a loop walks 32 x 32 tiles: a row of a tile
 * touches 32 of the input's cache lines, and the tile's next rows read on
 * along them (a 4096 x 4096 float32 transposed copy: 51 -> 18 ms on 2
 * cores).
 */
template <size_t N>
bool reads_across(const LoopPlan<N>& p) {
  const int r = p.rank;
  if (r < 2 || p.shape[r - 1] < 2 * kTile || p.shape[r - 2] < 2 * kTile ||
      p.strides[0][r - 1] != 1)
    return false;
  for (size_t k = 1; k < N; ++k)
    if (p.strides[k][r - 1] != 1 && p.strides[k][r - 2] == 1) return true;
  return false;
}

/** Tiles of a reads_across loop: planes x tile rows x tile columns. */
template <size_t N>
int64_t tile_count(const LoopPlan<N>& p) {
  const int r = p.rank;
  int64_t planes = 1;
  for (int d = 0; d + 2 < r; ++d) planes *= p.shape[d];
  return planes * ((p.shape[r - 2] + kTile - 1) / kTile) *
         ((p.shape[r - 1] + kTile - 1) / kTile);
}

/**
 * Calls row(offsets, n, inner_strides) for each row of tiles [begin, end),
 * each tile walked by for_each_row as a plan of its own (rows x columns)
 * from its first element: row is called from for_each_row alone, which
 * keeps it inlined there.
 */
template <size_t N, class Row>
void for_each_tile(const LoopPlan<N>& p, int64_t begin, int64_t end,
                   Row&& row) {
  const int r = p.rank;
  const int64_t rows = p.shape[r - 2], cols = p.shape[r - 1];
  const int64_t tile_cols = (cols + kTile - 1) / kTile;
  const int64_t tile_rows = (rows + kTile - 1) / kTile;
  LoopPlan<N> tile;
  tile.rank = 2;
  for (size_t k = 0; k < N; ++k) {
    tile.strides[k][0] = p.strides[k][r - 2];
    tile.strides[k][1] = p.strides[k][r - 1];
  }
  for (int64_t t = begin; t < end; ++t) {
    int64_t rest = t / tile_cols;
    const int64_t first_col = t % tile_cols * kTile;
    const int64_t first_row = rest % tile_rows * kTile;
    rest /= tile_rows;
    std::array<int64_t, N> first{};
    for (int d = r - 3; d >= 0; --d) {
      const int64_t i = rest % p.shape[d];
      rest /= p.shape[d];
      for (size_t k = 0; k < N; ++k) first[k] += i * p.strides[k][d];
    }
    for (size_t k = 0; k < N; ++k)
      first[k] +=
          first_row * tile.strides[k][0] + first_col * tile.strides[k][1];
    tile.shape[0] = std::min(kTile, rows - first_row);
    tile.shape[1] = std::min(kTile, cols - first_col);
    for_each_row(tile, 0, tile.shape[0] * tile.shape[1], row, first);
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
  if (reads_across(plan)) {
    parallel_for(tile_count(plan), kParallelGrain / (kTile * kTile),
                 [&](int64_t b, int64_t e) { for_each_tile(plan, b, e, row); });
    return;
  }
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
