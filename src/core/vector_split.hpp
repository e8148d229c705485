#pragma once
// How the CUDA elementwise and reduction kernels cut dense data into 128-bit
// vectors (llm.c's Packed128: one 16-byte load or store per operand), and
// how a reduction splits each output's range across blocks. Plain integer
// math, compiled by g++ too, so the CPU tests check that every element is
// visited exactly once.
#include <cstddef>
#include <cstdint>

#include "core/host_device.hpp"

namespace tapeflow {

/** Elements per 16-byte vector of the widest operand: 4 floats, 2 doubles. */
TPF_HOST_DEVICE constexpr int vector_width(size_t widest_itemsize) {
  return widest_itemsize >= 16 ? 1 : static_cast<int>(16 / widest_itemsize);
}

/** Whether `address` starts a vector of `width` elements of `itemsize`. */
TPF_HOST_DEVICE constexpr bool vector_aligned(uintptr_t address,
                                              size_t itemsize, int width) {
  return address % (itemsize * static_cast<size_t>(width)) == 0;
}

/**
 * The elementwise vector kernels count in 32-bit integers (half the
 * registers and instructions of 64-bit ones); larger tensors take the
 * general path.
 */
TPF_HOST_DEVICE constexpr bool vector_index_fits(int64_t numel) {
  return numel < (int64_t{1} << 31);
}

/**
 * A flat range of `numel` elements as `vectors` whole vectors, elements
 * [0, vectors * width), then the elements [tail_begin, numel) one at a time.
 */
struct VectorSplit {
  int64_t vectors;
  int64_t tail_begin;
};
TPF_HOST_DEVICE constexpr VectorSplit vector_split(int64_t numel, int width) {
  const int64_t vectors = numel / width;
  return {vectors, vectors * width};
}

/**
 * How a reduction of K outputs over N elements each splits: output k's
 * elements [p * chunk, min((p + 1) * chunk, N)) are block (k, p)'s, for p in
 * [0, parts). chunk is a multiple of the vector width, so no vector straddles
 * two blocks, and every part is non-empty. It depends on the shape and dtype
 * only (never on the data or the addresses), so the order of the sums, and
 * with it every bit of the result, is the same on every run. parts == 1
 * means one pass; otherwise a second pass reduces the K x parts partials.
 */
struct ReducePartition {
  int64_t parts;
  int64_t chunk;
};

/** Vectors a reduction thread loads at once (reduce_group_end below). */
constexpr int kReduceGroup = 4;

TPF_HOST_DEVICE constexpr ReducePartition reduce_partition(int64_t K, int64_t N,
                                                           int width,
                                                           int threads) {
  // Enough blocks to fill a GPU (~1024), each thread loading at least one
  // group of vectors, within the grid's y limit.
  constexpr int64_t kTargetBlocks = 1024, kMaxParts = 65535;
  int64_t parts = kTargetBlocks / (K > 0 ? K : 1);
  const int64_t by_work = N / (int64_t{kReduceGroup} * width * threads);
  if (by_work < parts) parts = by_work;
  if (parts > kMaxParts) parts = kMaxParts;
  if (parts < 1) parts = 1;
  int64_t chunk = (N + parts - 1) / parts;
  chunk = (chunk + width - 1) / width * width;
  if (chunk < width) chunk = width;
  parts = N > 0 ? (N + chunk - 1) / chunk : 1;
  return {parts, chunk};
}

/**
 * The first element of the v-th vector of a block's part: threads take
 * vectors v = t, t + threads, ... of their part, so a warp's loads are
 * adjacent, and each thread folds a vector's elements in order. The
 * scalar path (strided or misaligned input) walks the same elements in the
 * same order, so both give the same bits.
 */
TPF_HOST_DEVICE constexpr int64_t reduce_vector_begin(int64_t part,
                                                      int64_t chunk, int64_t v,
                                                      int width) {
  return part * chunk + v * width;
}

/**
 * The column reduction kernel's block: 32 adjacent outputs (a warp reads 32
 * adjacent elements of a row) by 8 threads along the rows, each loading 8
 * rows before it folds them.
 */
constexpr int kColumnReduceWidth = 32, kColumnReduceThreads = 8,
              kColumnReduceGroup = 8;

/**
 * How a reduction whose outputs are adjacent in memory and whose reduced
 * elements are not (a column sum: output k folds x[k + r * unit] over rows r)
 * splits its rows: rows [p * chunk, min((p + 1) * chunk, N)) are part p's,
 * for p in [0, parts), for every block of `block_columns` outputs. Enough
 * parts to give a GPU ~1024 blocks, each part at least `min_rows` rows, within
 * the grid's y limit; a function of the shape alone, like reduce_partition.
 */
TPF_HOST_DEVICE constexpr ReducePartition column_partition(int64_t K, int64_t N,
                                                           int block_columns,
                                                           int min_rows) {
  constexpr int64_t kTargetBlocks = 1024, kMaxParts = 65535;
  const int64_t column_blocks = (K + block_columns - 1) / block_columns;
  int64_t parts = kTargetBlocks / (column_blocks > 0 ? column_blocks : 1);
  const int64_t by_work = N / min_rows;
  if (by_work < parts) parts = by_work;
  if (parts > kMaxParts) parts = kMaxParts;
  if (parts < 1) parts = 1;
  const int64_t chunk = N > 0 ? (N + parts - 1) / parts : 1;
  return {N > 0 ? (N + chunk - 1) / chunk : 1, chunk};
}

/**
 * The reduction kernels load `unroll` of a thread's items (v, v + threads,
 * ...: 16-byte vectors of a dense row, elements of a column's rows) before
 * they fold them, in the same order, so that several loads per thread are in
 * flight at once: one at a time held an H200 to 74-76 % of its copy
 * bandwidth. Thread t's groups cover its items below `whole` (the whole,
 * aligned vectors of its part, or the part's rows) `unroll` at a time; this
 * is the first v past them, where the one-at-a-time loop takes over. Only
 * the loads move, not the fold order: the bits stay the same.
 */
TPF_HOST_DEVICE constexpr int64_t reduce_group_end(int64_t t, int64_t whole,
                                                   int threads, int unroll) {
  const int64_t mine = whole > t ? (whole - t + threads - 1) / threads : 0;
  return t + mine / unroll * unroll * threads;
}

}  // namespace tapeflow
