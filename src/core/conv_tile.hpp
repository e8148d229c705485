#pragma once
// The implicit-GEMM convolution kernel's block body (design: CUDA.md §4
// "Conv", path 4), written once for nvcc and g++. The CUDA kernel runs it on
// each thread block with __syncthreads() between phases; CI's host test runs
// the same function block by block over the whole grid with a loop over the
// block's threads standing in for each phase. A phase reads only what earlier
// phases wrote, so the order of threads within a phase does not change the
// result: the host run computes what the device computes, bounds checks,
// split-K and epilogue included.
//
// A Block provides for_each_thread(f), calling f(thread, state) for each of
// its kThreads threads with that thread's own State (registers on the
// device), and sync(), the barrier between phases.
#include <algorithm>
#include <cstdint>

#include "core/conv_index.hpp"

// Fully unrolled loops over a thread's fixed-size arrays keep them in
// registers (an indexed array goes to local memory). g++ unrolls on its own.
#ifdef __CUDA_ARCH__
#define TPF_UNROLL _Pragma("unroll")
#else
#define TPF_UNROLL
#endif

namespace tapeflow {

/**
 * One thread block's share: a 64×64 tile of the GEMM's output, K walked in
 * steps of 8 through shared memory, 256 threads of 4×4 outputs each.
 * Thread t owns rows (t % 16) + 16·i and columns (t / 16) + 16·j of the
 * tile: neighbouring threads take neighbouring rows (M runs along memory
 * for NCHW outputs) and read neighbouring shared-memory words.
 */
struct ImplicitTile {
  static constexpr int kM = 64, kN = 64, kK = 8, kThreads = 256;
  static constexpr int kRowsPerThread = 4, kColsPerThread = 4;
  static constexpr int kThreadsAlongM = kM / kRowsPerThread;  // 16
  static constexpr int kLoadsPerThread = kM * kK / kThreads;  // 2 per operand
  static_assert(kM * kK == kN * kK && kM * kK % kThreads == 0);
  static_assert(kThreadsAlongM * (kN / kColsPerThread) == kThreads);
};

/** The block's shared-memory stage of one K step of both operands. */
template <class T>
struct ImplicitSmem {
  T a[ImplicitTile::kK][ImplicitTile::kM];
  T b[ImplicitTile::kK][ImplicitTile::kN];
};

/** One thread's 4×4 accumulators: its registers on the device. */
template <class T>
struct ImplicitAccum {
  T v[ImplicitTile::kRowsPerThread][ImplicitTile::kColsPerThread];
};

/**
 * Where a GEMM's results go. With splits == 1 each output is written once
 * through the GEMM's c() map, plus the bias of its column when given (the
 * forward's out-channels). With splits > 1 each K slice writes its partial
 * sums to `slices`, laid out (group, split, M, N), and implicit_sum_slices
 * adds them in split order: deterministic, without atomics.
 */
template <class T>
struct ImplicitOutput {
  T* c = nullptr;
  T* slices = nullptr;
  int64_t splits = 1;
  const T* bias = nullptr;  // indexed (group·N + column)·bias_stride
  int64_t bias_stride = 0;

  TPF_HOST_DEVICE T finish(int64_t group, int64_t n, int64_t ni, T v) const {
    return bias ? v + bias[(group * n + ni) * bias_stride] : v;
  }
  TPF_HOST_DEVICE int64_t slice_index(int64_t group, int64_t split, int64_t m,
                                      int64_t n, int64_t mi, int64_t ni) const {
    return ((group * splits + split) * m + mi) * n + ni;
  }
};

/** The thread blocks of one group: tiles along M and N, times the splits. */
struct ImplicitGrid {
  int64_t tiles_m = 0, tiles_n = 0, splits = 1;
};

template <class Gemm>
ImplicitGrid implicit_grid(const Gemm& gemm, int64_t splits) {
  return {(gemm.m() + ImplicitTile::kM - 1) / ImplicitTile::kM,
          (gemm.n() + ImplicitTile::kN - 1) / ImplicitTile::kN, splits};
}

/** x[offset], or the zero that -1 (padding, stride gap) stands for. */
template <class T>
TPF_HOST_DEVICE T load_or_zero(const T* p, int64_t offset) {
  return offset < 0 ? T(0) : p[offset];
}

/**
 * Phase 1 of a K step: thread t stages its 2 elements of each operand's
 * tile (zeros past M, N or the slice's end) into shared memory. Each
 * shared element has exactly one writer: element e = t + 256·r.
 */
template <class Gemm, class T>
TPF_HOST_DEVICE void implicit_stage(const Gemm& gemm, const T* a, const T* b,
                                    int64_t m, int64_t n, int64_t m0,
                                    int64_t n0, int64_t k0, int64_t k_end,
                                    ImplicitSmem<T>& s, int t) {
  using Tile = ImplicitTile;
  TPF_UNROLL
  for (int r = 0; r < Tile::kLoadsPerThread; ++r) {
    const int e = t + r * Tile::kThreads;
    const int am = e % Tile::kM, ak = e / Tile::kM;
    const bool a_in = m0 + am < m && k0 + ak < k_end;
    s.a[ak][am] = load_or_zero(a, a_in ? gemm.a(m0 + am, k0 + ak) : -1);
    const int bn = e % Tile::kN, bk = e / Tile::kN;
    const bool b_in = n0 + bn < n && k0 + bk < k_end;
    s.b[bk][bn] = load_or_zero(b, b_in ? gemm.b(k0 + bk, n0 + bn) : -1);
  }
}

/** Phase 2 of a K step: thread t adds the staged products to its 4×4. */
template <class T>
TPF_HOST_DEVICE void implicit_multiply(const ImplicitSmem<T>& s,
                                       ImplicitAccum<T>& acc, int t) {
  using Tile = ImplicitTile;
  const int tm = t % Tile::kThreadsAlongM, tn = t / Tile::kThreadsAlongM;
  TPF_UNROLL
  for (int kk = 0; kk < Tile::kK; ++kk) {
    T a[Tile::kRowsPerThread], b[Tile::kColsPerThread];
    TPF_UNROLL
    for (int i = 0; i < Tile::kRowsPerThread; ++i)
      a[i] = s.a[kk][tm + Tile::kThreadsAlongM * i];
    TPF_UNROLL
    for (int j = 0; j < Tile::kColsPerThread; ++j)
      b[j] = s.b[kk][tn + (Tile::kThreads / Tile::kThreadsAlongM) * j];
    TPF_UNROLL
    for (int i = 0; i < Tile::kRowsPerThread; ++i) {
      TPF_UNROLL
      for (int j = 0; j < Tile::kColsPerThread; ++j) acc.v[i][j] += a[i] * b[j];
    }
  }
}

/** Epilogue: thread t writes its outputs that lie inside M × N. */
template <class Gemm, class T>
TPF_HOST_DEVICE void implicit_store(const Gemm& gemm,
                                    const ImplicitOutput<T>& out, int64_t m,
                                    int64_t n, int64_t m0, int64_t n0,
                                    int64_t split, const ImplicitAccum<T>& acc,
                                    int t) {
  using Tile = ImplicitTile;
  const int tm = t % Tile::kThreadsAlongM, tn = t / Tile::kThreadsAlongM;
  TPF_UNROLL
  for (int i = 0; i < Tile::kRowsPerThread; ++i) {
    TPF_UNROLL
    for (int j = 0; j < Tile::kColsPerThread; ++j) {
      const int64_t mi = m0 + tm + Tile::kThreadsAlongM * i;
      const int64_t ni = n0 + tn + (Tile::kThreads / Tile::kThreadsAlongM) * j;
      if (mi >= m || ni >= n) continue;
      if (out.splits == 1)
        out.c[gemm.c(mi, ni)] = out.finish(gemm.group, n, ni, acc.v[i][j]);
      else
        out.slices[out.slice_index(gemm.group, split, m, n, mi, ni)] =
            acc.v[i][j];
    }
  }
}

/**
 * One thread block: tile (tile_m, tile_n) of `gemm` (an FpropGemm,
 * DgradGemm or WgradGemm of one group) over K slice `split`, reading the
 * operands a and b through the gemm's maps.
 */
template <class Gemm, class T, class Block>
TPF_HOST_DEVICE void implicit_gemm_block(const Gemm& gemm, const T* a,
                                         const T* b,
                                         const ImplicitOutput<T>& out,
                                         int64_t tile_m, int64_t tile_n,
                                         int64_t split, ImplicitSmem<T>& smem,
                                         Block& block) {
  const int64_t m = gemm.m(), n = gemm.n();
  const int64_t m0 = tile_m * ImplicitTile::kM, n0 = tile_n * ImplicitTile::kN;
  const SplitK slices{gemm.k(), out.splits};
  const int64_t k_begin = slices.begin(split), k_end = slices.end(split);
  block.for_each_thread([&](int, ImplicitAccum<T>& acc) {
    TPF_UNROLL
    for (int i = 0; i < ImplicitTile::kRowsPerThread; ++i) {
      TPF_UNROLL
      for (int j = 0; j < ImplicitTile::kColsPerThread; ++j) acc.v[i][j] = T(0);
    }
  });
  for (int64_t k0 = k_begin; k0 < k_end; k0 += ImplicitTile::kK) {
    block.for_each_thread([&](int t, ImplicitAccum<T>&) {
      implicit_stage(gemm, a, b, m, n, m0, n0, k0, k_end, smem, t);
    });
    block.sync();
    block.for_each_thread(
        [&](int t, ImplicitAccum<T>& acc) { implicit_multiply(smem, acc, t); });
    // The next step's staging overwrites what this step's multiply reads.
    block.sync();
  }
  block.for_each_thread([&](int t, ImplicitAccum<T>& acc) {
    implicit_store(gemm, out, m, n, m0, n0, split, acc, t);
  });
}

/**
 * The second pass of split-K: output e (row-major over the group's M × N)
 * is the sum of its slices in split order, written through c().
 */
template <class Gemm, class T>
TPF_HOST_DEVICE void implicit_sum_slices(const Gemm& gemm,
                                         const ImplicitOutput<T>& out,
                                         int64_t e) {
  const int64_t m = gemm.m(), n = gemm.n(), mi = e / n, ni = e % n;
  T sum = T(0);
  for (int64_t s = 0; s < out.splits; ++s)
    sum += out.slices[out.slice_index(gemm.group, s, m, n, mi, ni)];
  out.c[gemm.c(mi, ni)] = out.finish(gemm.group, n, ni, sum);
}

/**
 * How many K slices wgrad's implicit GEMM takes (1: no split). Its M × N
 * (og × ∏k·cg) is small while K (N·P) is long, so a few tiles would run
 * on a few SMs; slices fill kTargetBlocks blocks (several waves on a large
 * GPU), each at least kMinSliceK deep, their (groups, splits, M, N)
 * workspace within `budget_bytes`. A function of the shape alone, so the
 * sums' order and the result are the same on every run.
 */
inline int64_t implicit_wgrad_splits(int64_t blocks_per_split, int64_t k,
                                     int64_t slice_bytes,
                                     int64_t budget_bytes) {
  constexpr int64_t kTargetBlocks = 1024, kMinSliceK = 256, kMaxSplits = 256;
  int64_t splits = (kTargetBlocks + blocks_per_split - 1) /
                   std::max<int64_t>(1, blocks_per_split);
  splits = std::min({splits, k / kMinSliceK, kMaxSplits,
                     budget_bytes / std::max<int64_t>(1, slice_bytes)});
  return std::max<int64_t>(1, splits);
}

}  // namespace tapeflow
