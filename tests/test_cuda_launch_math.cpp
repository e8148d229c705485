// White-box: the host-side policy and index math of the CUDA kernels that
// CPU CI can check without a GPU: which cuBLAS arithmetic a matmul gets
// (core/gemm_compute.hpp), how the elementwise and reduction kernels cut
// their work into 16-byte vectors and blocks (core/vector_split.hpp), the
// elementwise kernels' strided offsets and row vectors
// (core/strided_offsets.hpp), and a reduction's offsets
// (core/reduce_block.hpp).
#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

#include "core/gemm_compute.hpp"
#include "core/reduce_block.hpp"
#include "core/strided_offsets.hpp"
#include "core/vector_split.hpp"
#include "support/check.hpp"

namespace tpf = tapeflow;
using tpf::GemmCompute;
using P = tpf::config::Float32Precision;

TEST_CASE("float32 matmuls follow the precision setting; float64 never") {
  CHECK(tpf::gemm_compute(tpf::float32, P::highest) == GemmCompute::f32);
  CHECK(tpf::gemm_compute(tpf::float32, P::high) == GemmCompute::f32_fast_tf32);
  CHECK(tpf::gemm_compute(tpf::float32, P::medium) ==
        GemmCompute::f32_fast_bf16);
  for (const P p : {P::highest, P::high, P::medium})
    CHECK(tpf::gemm_compute(tpf::float64, p) == GemmCompute::f64);
  // The setting the library holds is the one a GPU matmul reads.
  const P before = tpf::config::float32_matmul_precision();
  tpf::config::set_float32_matmul_precision("medium");
  CHECK(tpf::gemm_compute(tpf::float32,
                          tpf::config::float32_matmul_precision()) ==
        GemmCompute::f32_fast_bf16);
  tpf::config::set_float32_matmul_precision(before);
}

TEST_CASE("a vector holds 16 bytes of the widest operand") {
  CHECK(tpf::vector_width(4) == 4);   // float4
  CHECK(tpf::vector_width(8) == 2);   // double2
  CHECK(tpf::vector_width(1) == 16);  // bool
  CHECK(tpf::vector_aligned(0x1000, 4, 4));
  CHECK_FALSE(tpf::vector_aligned(0x1004, 4, 4));
  CHECK(tpf::vector_aligned(0x1004, 1, 4));  // a bool mask beside floats
  CHECK_FALSE(tpf::vector_aligned(0x1008, 8, 2));
  CHECK(tpf::vector_index_fits((int64_t{1} << 31) - 1));
  CHECK_FALSE(tpf::vector_index_fits(int64_t{1} << 31));
}

TEST_CASE("the elementwise vectors and tail cover every element once") {
  for (const int width : {2, 4, 16})
    for (const int64_t numel : {int64_t{1}, int64_t{3}, int64_t{4}, int64_t{17},
                                int64_t{1000}, int64_t{4099}}) {
      CAPTURE(width);
      CAPTURE(numel);
      const tpf::VectorSplit s = tpf::vector_split(numel, width);
      std::vector<int> seen(static_cast<size_t>(numel), 0);
      for (int64_t v = 0; v < s.vectors; ++v)
        for (int j = 0; j < width; ++j) ++seen.at(v * width + j);
      for (int64_t i = s.tail_begin; i < numel; ++i) ++seen.at(i);
      CHECK(numel - s.tail_begin < width);  // the tail fits the first threads
      CHECK(
          std::all_of(seen.begin(), seen.end(), [](int n) { return n == 1; }));
    }
}

namespace {

/**
 * A loop of three operands (out, a, b) as the kernels receive it: extents
 * as FastDivmods, strides by operand, built from per-axis stride triples.
 */
struct Loop3 {
  int rank = 0;
  std::vector<int64_t> shape;
  tpf::FastDivmod extents[tpf::kMaxRank];
  int64_t strides[3][tpf::kMaxRank] = {};
  int64_t numel = 1;

  Loop3(std::vector<int64_t> shape_,
        const std::vector<std::array<int64_t, 3>>& per_axis)
      : rank(static_cast<int>(shape_.size())), shape(std::move(shape_)) {
    for (int d = 0; d < rank; ++d) {
      extents[d] = tpf::FastDivmod(static_cast<uint32_t>(shape[d]));
      for (int k = 0; k < 3; ++k) strides[k][d] = per_axis[d][k];
      numel *= shape[d];
    }
  }

  /** The operands' offsets at flat index i, by 64-bit division. */
  std::array<int64_t, 3> offsets(int64_t i) const {
    std::array<int64_t, 3> off{};
    for (int d = rank - 1; d >= 0; --d) {
      for (int k = 0; k < 3; ++k) off[k] += i % shape[d] * strides[k][d];
      i /= shape[d];
    }
    return off;
  }
};

}  // namespace

TEST_CASE("strided offsets through FastDivmod equal 64-bit division") {
  // Loops as plan_elementwise leaves them: a row broadcast (stride 0), a
  // transposed operand, a 5-d slice with odd extents and negative strides.
  struct Loop {
    std::vector<int64_t> shape;
    std::vector<std::array<int64_t, 3>> strides;  // per axis: out, a, b
  };
  const std::vector<Loop> loops = {
      {{8192, 8192}, {{8192, 8192, 0}, {1, 1, 1}}},
      {{300, 257}, {{257, 1, 257}, {1, 300, 1}}},
      {{3, 5, 7, 2, 11},
       {{770, -1540, 5}, {154, 308, 0}, {22, -44, 1}, {11, 22, 7}, {1, 2, 3}}},
      {{1}, {{1, 0, 1}}},
  };
  for (const Loop& given : loops) {
    const Loop3 loop(given.shape, given.strides);
    CAPTURE(loop.numel);
    int64_t mismatches = 0;
    // Every index of the small loops; a stride of indices of the large one.
    const int64_t step = loop.numel > 100000 ? 4099 : 1;
    for (int64_t i = 0; i < loop.numel; i += step) {
      int64_t fast[3];
      tpf::strided_offsets<3>(static_cast<uint32_t>(i), loop.rank, loop.extents,
                              loop.strides, fast);
      const std::array<int64_t, 3> slow = loop.offsets(i);
      for (int k = 0; k < 3; ++k) mismatches += fast[k] != slow[k];
    }
    CHECK(mismatches == 0);
  }
}

TEST_CASE("row vectors: which loops fit, and each vector's offsets") {
  // Per axis: out, a, b strides. W = 4 (floats).
  struct Loop {
    std::vector<int64_t> shape;
    std::vector<std::array<int64_t, 3>> strides;
    bool fits;
    uint32_t inner_broadcast;
  };
  const std::vector<Loop> loops = {
      // A bias row added to every row; a column to every column.
      {{64, 32}, {{32, 32, 0}, {1, 1, 1}}, true, 0},
      {{64, 32}, {{32, 32, 1}, {1, 1, 0}}, true, 4},
      // A slice of whole vectors, a scalar a, a row broadcast over rank 3.
      {{5, 6, 8}, {{48, 0, 0}, {8, 0, 8}, {1, 0, 1}}, true, 2},
      {{5, 6, 8}, {{48, 96, 0}, {8, 16, 8}, {1, 1, 1}}, true, 0},
      // A transposed operand, rows of 6, a row start between vectors, a
      // reversed row.
      {{300, 256}, {{256, 1, 256}, {1, 300, 1}}, false, 0},
      {{4, 6}, {{6, 6, 0}, {1, 1, 1}}, false, 0},
      {{3, 8}, {{8, 9, 8}, {1, 1, 1}}, false, 0},
      {{3, 8}, {{8, 8, 8}, {1, -1, 1}}, false, 0},
  };
  constexpr int W = 4;
  for (const Loop& given : loops) {
    const Loop3 loop(given.shape, given.strides);
    CAPTURE(loop.numel);
    uint32_t inner_broadcast = 99;
    const bool fits = tpf::row_vectors_fit<3>(loop.rank, loop.shape.data(),
                                              loop.strides, W, inner_broadcast);
    REQUIRE(fits == given.fits);
    if (!fits) continue;
    CHECK(inner_broadcast == given.inner_broadcast);
    // Vector v covers elements [v W, v W + W) of one row: each operand's
    // offset is the first element's, and a contiguous one starts a vector.
    const tpf::FastDivmod per_row(
        static_cast<uint32_t>(loop.shape[loop.rank - 1] / W));
    int64_t mismatches = 0, misaligned = 0;
    for (int64_t v = 0; v < loop.numel / W; ++v) {
      int64_t fast[3];
      tpf::row_vector_offsets<3>(static_cast<uint32_t>(v), per_row, W,
                                 loop.rank, loop.extents, loop.strides,
                                 inner_broadcast, fast);
      const std::array<int64_t, 3> slow = loop.offsets(v * W);
      for (int k = 0; k < 3; ++k) {
        mismatches += fast[k] != slow[k];
        misaligned += !((inner_broadcast >> k) & 1u) && fast[k] % W != 0;
      }
    }
    CHECK(mismatches == 0);
    CHECK(misaligned == 0);
  }
}

TEST_CASE("transposed operands: read along the second-to-last axis") {
  struct Loop {
    int rank;
    std::vector<std::array<int64_t, 3>> strides;  // per axis: out, a, b
    uint32_t transposed;
  };
  const std::vector<Loop> loops = {
      // a transposed; a and b transposed over a batch axis; a column
      // broadcast read across (stride 0 along the last axis).
      {2, {{45, 1, 45}, {1, 70, 1}}, 2},
      {3, {{2048, 2048, 2048}, {32, 1, 1}, {1, 64, 32}}, 6},
      {2, {{70, 1, 70}, {1, 0, 1}}, 2},
      // Nothing transposed; a transposed output; one axis.
      {2, {{70, 70, 0}, {1, 1, 1}}, 0},
      {2, {{1, 1, 70}, {45, 45, 1}}, 0},
      {1, {{1, 2, 0}}, 0},
  };
  for (const Loop& loop : loops) {
    int64_t strides[3][tpf::kMaxRank] = {};
    for (int d = 0; d < loop.rank; ++d)
      for (int k = 0; k < 3; ++k) strides[k][d] = loop.strides[d][k];
    CHECK(tpf::transposed_operands<3>(loop.rank, strides) == loop.transposed);
  }
}

TEST_CASE("transposed tiles: each walk covers the tile once, warps coalesce") {
  // elementwise.cuh's tile kernel: 32 x 8 threads, 4 steps, 32 x 33 slots.
  constexpr int kTile = 32, kRows = 8, kSteps = kTile / kRows;
  for (const bool across : {true, false}) {
    CAPTURE(across);
    // Every cell once; slots (a cell's, whichever walk reaches it) distinct.
    std::vector<int> cells(kTile * kTile, 0), slots(kTile * (kTile + 1), 0);
    bool adjacent = true, distinct_banks = true;
    for (int ty = 0; ty < kRows; ++ty)
      for (int step = 0; step < kSteps; ++step) {
        std::vector<int> banks;
        for (int tx = 0; tx < kTile; ++tx) {
          const tpf::TileCell c = tpf::tile_cell(across, tx, ty, step, kRows);
          ++cells.at(c.row * kTile + c.column);
          const int slot = tpf::tile_slot(c, kTile);
          ++slots.at(slot);
          banks.push_back(slot % 32);
          // A warp's lanes step one element along the operand's contiguous
          // axis: down a column when transposed, along a row otherwise.
          const tpf::TileCell next =
              tpf::tile_cell(across, tx + 1, ty, step, kRows);
          if (tx + 1 < kTile)
            adjacent &= across
                            ? next.row == c.row + 1 && next.column == c.column
                            : next.column == c.column + 1 && next.row == c.row;
        }
        std::sort(banks.begin(), banks.end());
        distinct_banks &=
            std::adjacent_find(banks.begin(), banks.end()) == banks.end();
      }
    CHECK(
        std::all_of(cells.begin(), cells.end(), [](int n) { return n == 1; }));
    CHECK(
        std::all_of(slots.begin(), slots.end(), [](int n) { return n <= 1; }));
    CHECK(adjacent);
    CHECK(distinct_banks);  // 4-byte elements: no bank conflict either way
  }
}

namespace {

/** The elements a (part, thread) folds, in order; whether all were whole. */
struct Visits {
  std::vector<std::vector<int64_t>> order;
  bool groups_whole = true;  // every grouped vector lies inside its part
};

/**
 * Simulates the reduction kernel's first pass over dense, aligned data:
 * each (part, thread) folds groups of `group` vectors loaded together up to
 * reduce_group_end, then one vector at a time (all of them for group 0, as
 * over strided data), as reduce.cu's loops visit them. The split is a function
 * of (K, N, width) alone, so this order, and with it every bit of a sum, is the
 * same on every run.
 */
Visits visits(int64_t N, tpf::ReducePartition s, int width, int threads,
              int group) {
  Visits result;
  for (int64_t p = 0; p < s.parts; ++p) {
    const int64_t begin = tpf::reduce_vector_begin(p, s.chunk, 0, width);
    const int64_t end = std::min(begin + s.chunk, N);
    const int64_t vectors = (end - begin + width - 1) / width;
    const int64_t whole = (end - begin) / width;
    const auto fold = [&](int64_t v, std::vector<int64_t>& mine) {
      const int64_t first = tpf::reduce_vector_begin(p, s.chunk, v, width);
      for (int64_t r = first; r < std::min(first + width, end); ++r)
        mine.push_back(r);
    };
    for (int t = 0; t < threads; ++t) {
      std::vector<int64_t> mine;
      int64_t v = t;
      const int64_t group_end =
          group > 0 ? tpf::reduce_group_end(t, whole, threads, group) : t;
      for (; v < group_end; v += int64_t{group} * threads)
        for (int g = 0; g < group; ++g) {
          const int64_t w = v + int64_t{g} * threads;
          result.groups_whole &= w < whole;
          fold(w, mine);
        }
      for (; v < vectors; v += threads) fold(v, mine);
      result.order.push_back(mine);
    }
  }
  return result;
}

}  // namespace

TEST_CASE("a reduction's parts tile each output's range in whole vectors") {
  constexpr int kThreads = 256;
  struct Case {
    int64_t K, N;
    int width;
  };
  const Case cases[] = {{1, 1, 4},
                        {1, 1023, 4},
                        {1, 4096, 4},
                        {1, 1 << 20, 4},
                        {1, 1 << 20, 2},
                        {1, 1000003, 4},
                        {3, 777777, 2},
                        {64, 1 << 16, 4},
                        {1024, 4096, 4},
                        {100000, 7, 4},
                        // Dozens of vectors per thread, a partial last one.
                        {1000, 50001, 4},
                        {1, 3000001, 2},
                        {1, int64_t{64} << 20, 4}};
  for (const Case& c : cases) {
    CAPTURE(c.K);
    CAPTURE(c.N);
    CAPTURE(c.width);
    const tpf::ReducePartition s =
        tpf::reduce_partition(c.K, c.N, c.width, kThreads);
    CHECK(s.parts >= 1);
    CHECK(s.parts <= 65535);
    CHECK(s.chunk % c.width == 0);
    CHECK((s.parts - 1) * s.chunk < c.N);  // no empty part
    CHECK(s.parts * s.chunk >= c.N);       // nothing left over
    // A thread of a split output loads at least one group of vectors.
    const int64_t group_span = int64_t{tpf::kReduceGroup} * c.width * kThreads;
    if (c.N < group_span) CHECK(s.parts == 1);
    if (s.parts > 1) CHECK(s.chunk >= group_span);
    // A full sum of 64M floats keeps ~1024 blocks busy, each thread folding
    // a few vectors.
    if (c.K == 1 && c.N >= (int64_t{1} << 26)) CHECK(s.parts >= 512);
    // The second pass reduces the K x parts partials in one part each.
    CHECK(tpf::reduce_partition(c.K, s.parts, c.width, kThreads).parts == 1);
    if (c.N > 1 << 22) continue;  // the simulation below is O(N)
    const Visits single = visits(c.N, s, c.width, kThreads, 0);
    std::vector<int> seen(static_cast<size_t>(c.N), 0);
    bool in_order = true;
    for (const auto& mine : single.order) {
      in_order &= std::is_sorted(mine.begin(), mine.end());
      for (int64_t r : mine) ++seen.at(r);
    }
    CHECK(in_order);
    CHECK(std::all_of(seen.begin(), seen.end(), [](int n) { return n == 1; }));
    // Grouped loads (kReduceGroup = 4, and other sizes) fold the same
    // elements in the same order, so they give the same bits.
    for (const int group : {1, 2, 4, 7}) {
      CAPTURE(group);
      const Visits grouped = visits(c.N, s, c.width, kThreads, group);
      CHECK(grouped.groups_whole);
      CHECK(grouped.order == single.order);
    }
  }
}

TEST_CASE("a column reduction's parts tile the rows; its groups stay inside") {
  // reduce.cu's column kernel: blocks of 32 outputs, 8 threads along the
  // rows, groups of 8 rows, parts of at least 64 rows.
  constexpr int kColumns = tpf::kColumnReduceWidth,
                kThreads = tpf::kColumnReduceThreads,
                kGroup = tpf::kColumnReduceGroup, kMinRows = kThreads * kGroup;
  struct Case {
    int64_t K, N;
  };
  const Case cases[] = {{32, 1},        {67, 4099},     {1000, 64},
                        {8192, 8192},   {32, 1 << 20},  {1 << 20, 2},
                        {100, 1000003}, {40000, 77777}, {32, 0}};
  for (const Case& c : cases) {
    CAPTURE(c.K);
    CAPTURE(c.N);
    const tpf::ReducePartition s =
        tpf::column_partition(c.K, c.N, kColumns, kMinRows);
    const int64_t column_blocks = (c.K + kColumns - 1) / kColumns;
    CHECK(s.parts >= 1);
    CHECK(s.parts <= 65535);
    CHECK(s.parts <= std::max<int64_t>(1, 1024 / column_blocks));
    if (s.parts > 1) {
      CHECK(s.chunk >= kMinRows);
      CHECK((s.parts - 1) * s.chunk < c.N);  // no empty part
    }
    CHECK(s.parts * s.chunk >= c.N);  // every row in a part
    // A 64M-element column sum fills ~1024 blocks.
    if (c.K * c.N >= (int64_t{1} << 26)) CHECK(column_blocks * s.parts >= 512);
    // Each part's rows as the kernel's threads fold them: thread ty takes
    // rows ty, ty + 8, ... in order, grouped up to reduce_group_end.
    std::vector<int> seen(static_cast<size_t>(c.N), 0);
    bool in_order = true, groups_inside = true;
    for (int64_t p = 0; p < s.parts; ++p) {
      const int64_t begin = p * s.chunk;
      const int64_t rows = std::min(begin + s.chunk, c.N) - begin;
      for (int ty = 0; ty < kThreads; ++ty) {
        std::vector<int64_t> mine;
        int64_t v = ty;
        const int64_t group_end =
            tpf::reduce_group_end(v, rows, kThreads, kGroup);
        for (; v < group_end; v += kGroup * kThreads)
          for (int g = 0; g < kGroup; ++g) {
            groups_inside &= v + g * kThreads < rows;
            mine.push_back(begin + v + g * kThreads);
          }
        for (; v < rows; v += kThreads) mine.push_back(begin + v);
        in_order &= std::is_sorted(mine.begin(), mine.end());
        for (int64_t r : mine) ++seen.at(static_cast<size_t>(r));
      }
    }
    CHECK(in_order);
    CHECK(groups_inside);
    CHECK(std::all_of(seen.begin(), seen.end(), [](int n) { return n == 1; }));
  }
}

TEST_CASE("a reduction's blocks: offsets of every element, dense or split") {
  struct Axis {
    int64_t extent, stride;
  };
  struct Case {
    std::vector<Axis> axes;
    bool dense;
  };
  const std::vector<Case> cases = {
      // An NCHW bias gradient's reduced axes (N, H, W) around C = 3; its
      // kept C; a transpose; size-1 axes of any stride; a broadcast; dense
      // rows and a strided column.
      {{{4, 3 * 35}, {5, 7}, {7, 1}}, false},
      {{{3, 35}}, true},
      {{{6, 1}, {5, 6}}, false},
      {{{1, 999}, {6, 5}, {1, 77}, {5, 1}}, true},
      {{{3, 0}, {4, 1}}, false},
      {{{4, 10}, {10, 1}}, true},
      {{{9, 11}}, true},
      {{{5, -7}, {3, 1}}, false},  // a reversed view
  };
  for (const Case& c : cases) {
    tpf::ReduceBlock block;
    for (const Axis& a : c.axes) block.add(a.extent, a.stride);
    CAPTURE(block.rank);
    CHECK(block.dense == c.dense);
    int64_t count = 1;
    for (const Axis& a : c.axes) count *= a.extent;
    CHECK(block.count == count);
    int64_t first_wrong = -1;
    for (int64_t i = 0; i < count; ++i) {
      int64_t expected = 0, rest = i;
      for (size_t d = c.axes.size(); d-- > 0;) {
        expected += rest % c.axes[d].extent * c.axes[d].stride;
        rest /= c.axes[d].extent;
      }
      if (first_wrong < 0 && block.offset(i) != expected) first_wrong = i;
    }
    CHECK(first_wrong == -1);
  }
  // Past 2^31 elements the split takes 64-bit divisions.
  tpf::ReduceBlock big;
  big.add(int64_t{1} << 20, 3);
  big.add(int64_t{1} << 12, 1 << 22);
  REQUIRE_FALSE(big.dense);
  const int64_t i = (int64_t{1} << 32) - 5;
  CHECK(big.offset(i) == (i / 4096) * 3 + (i % 4096) * (1 << 22));
  // An empty block whose other extent is huge: no overflow, nothing indexed.
  tpf::ReduceBlock empty;
  empty.add(2, 1);
  empty.add(std::numeric_limits<int64_t>::max(), 2);
  empty.add(0, 1);
  CHECK(empty.count == 0);
}
