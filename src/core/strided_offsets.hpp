#pragma once
// The element offsets of a strided loop at a flat index (the CUDA
// elementwise kernels' non-flat path: broadcasts, transposes, slices), with
// each extent's division prepared as a FastDivmod, and of its 128-bit
// vectors where every operand's rows are contiguous or broadcast. Shared
// with CI's host tests, which compare them with plain 64-bit division.
#include <cstdint>

#include "core/fast_divmod.hpp"
#include "core/host_device.hpp"
#include "tapeflow/core/shape.hpp"

namespace tapeflow {

/**
 * The offsets of N operands at flat index i of a row-major loop over `rank`
 * extents (`extents[d]` divides by extent d; operand k steps strides[k][d]
 * along it): i < 2³¹.
 */
template <int N>
TPF_HOST_DEVICE void strided_offsets(uint32_t i, int rank,
                                     const FastDivmod* extents,
                                     const int64_t (*strides)[kMaxRank],
                                     int64_t (&off)[N]) {
  for (int k = 0; k < N; ++k) off[k] = 0;
  for (int d = rank - 1; d >= 0; --d) {
    uint32_t rest, at;
    extents[d].divmod(i, rest, at);
    for (int k = 0; k < N; ++k) off[k] += int64_t{at} * strides[k][d];
    i = rest;
  }
}

/**
 * Whether a loop can run as row vectors of `width` elements: the innermost
 * extent is a multiple of width and every operand steps 1 (a contiguous
 * row) or 0 (one element broadcast along the row, bit k of
 * `inner_broadcast`) along it; the outer strides of the contiguous rows are
 * multiples of width, so that each row starts a vector where its tensor's
 * data does (the caller checks that). A bias row added to every row of a
 * matrix is the common case.
 */
template <int N>
TPF_HOST_DEVICE bool row_vectors_fit(int rank, const int64_t* shape,
                                     const int64_t (*strides)[kMaxRank],
                                     int width, uint32_t& inner_broadcast) {
  inner_broadcast = 0;
  if (rank < 1 || shape[rank - 1] % width != 0) return false;
  for (int k = 0; k < N; ++k) {
    const int64_t inner = strides[k][rank - 1];
    if (inner == 0) {
      inner_broadcast |= 1u << k;
      continue;
    }
    if (inner != 1) return false;
    for (int d = 0; d + 1 < rank; ++d)
      if (strides[k][d] % width != 0) return false;
  }
  return true;
}

/**
 * The first element's offsets of vector v of a loop that row_vectors_fit:
 * `vectors_per_row` divides by the innermost extent / width; the row's
 * start comes from the rank - 1 outer axes.
 */
template <int N>
TPF_HOST_DEVICE void row_vector_offsets(
    uint32_t v, const FastDivmod& vectors_per_row, int width, int rank,
    const FastDivmod* extents, const int64_t (*strides)[kMaxRank],
    uint32_t inner_broadcast, int64_t (&off)[N]) {
  uint32_t row, column;
  vectors_per_row.divmod(v, row, column);
  strided_offsets<N>(row, rank - 1, extents, strides, off);
  for (int k = 0; k < N; ++k)
    if (!((inner_broadcast >> k) & 1u)) off[k] += int64_t{column} * width;
}

/**
 * The operands (bit k) that the elementwise kernels read through a tile
 * transposed in shared memory: those that step 1 along the loop's
 * second-to-last axis and not along its last, as a transposed matrix does.
 * None where the loop has fewer than two axes or the output is one of them
 * (its writes would not coalesce either way).
 */
template <int N>
TPF_HOST_DEVICE uint32_t
transposed_operands(int rank, const int64_t (*strides)[kMaxRank]) {
  if (rank < 2) return 0;
  uint32_t mask = 0;
  for (int k = 0; k < N; ++k)
    if (strides[k][rank - 1] != 1 && strides[k][rank - 2] == 1) mask |= 1u << k;
  return (mask & 1u) != 0 ? 0 : mask;
}

/** A cell of the elementwise kernels' transposed tiles. */
struct TileCell {
  int row, column;
};

/**
 * The cell that thread (tx, ty) of the transposed-tile kernel loads at
 * `step`, with `rows_per_step` rows of threads: a transposed input's threads
 * walk the tile's columns with tx along its rows (the input's contiguous
 * axis), the other operands' walk its rows with tx along the columns, so a
 * warp's 32 loads or stores are adjacent either way. The compute phase
 * takes the cells of the second walk.
 */
TPF_HOST_DEVICE constexpr TileCell tile_cell(bool across, int tx, int ty,
                                             int step, int rows_per_step) {
  const int walked = ty + step * rows_per_step;
  return across ? TileCell{tx, walked} : TileCell{walked, tx};
}

/**
 * A cell's slot in shared memory: by column, each padded to `tile` + 1
 * slots, so that the 32 cells of a tile's row or of its column fall in 32
 * distinct banks (CUDA's transpose sample).
 */
TPF_HOST_DEVICE constexpr int tile_slot(TileCell cell, int tile) {
  return cell.column * (tile + 1) + cell.row;
}

}  // namespace tapeflow
