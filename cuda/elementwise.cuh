#pragma once
// Elementwise launches over the shared LoopPlan: a grid-stride loop whose
// index is decomposed into per-operand offsets (skipped when all are flat;
// core/strided_offsets.hpp below 2³¹ elements).
// Bodies that can (below) take a vector path instead: one 128-bit load per
// operand and one 128-bit store per step, four floats or two doubles at a
// time (CUDA.md §4, llm.c's Packed128), over flat launches and over loops
// whose rows are contiguous or broadcast in every operand (a bias row).
#include <algorithm>
#include <array>
#include <concepts>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "check.hpp"
#include "context.hpp"
#include "core/loop_plan.hpp"
#include "core/strided_offsets.hpp"
#include "core/vector_split.hpp"

namespace tapeflow::cuda {

template <int N>
struct DevicePlan {
  int rank;
  bool flat;
  // Below 2³¹ elements the index splits through FastDivmods (a few
  // instructions per axis), else through 64-bit divisions (dozens).
  bool index32;
  int64_t flat_stride[N];  // 1, or 0 for a single broadcast element
  int64_t numel;
  int64_t shape[kMaxRank];
  FastDivmod extents[kMaxRank];  // shape's, when index32
  int64_t strides[N][kMaxRank];

  __device__ void offsets(int64_t i, int64_t (&off)[N]) const {
    if (flat) {
      for (int k = 0; k < N; ++k) off[k] = i * flat_stride[k];
      return;
    }
    if (index32) {
      strided_offsets<N>(static_cast<uint32_t>(i), rank, extents, strides, off);
      return;
    }
    for (int k = 0; k < N; ++k) off[k] = 0;
    for (int d = rank - 1; d >= 0; --d) {
      const int64_t idx = i % shape[d];
      i /= shape[d];
      for (int k = 0; k < N; ++k) off[k] += idx * strides[k][d];
    }
  }
};

template <int N>
DevicePlan<N> device_plan(const Tensor& out,
                          const std::array<const Tensor*, N - 1>& in) {
  DevicePlan<N> d{};
  d.numel = out.numel();
  std::array<int64_t, N> flat_stride{};
  d.flat = flat_elementwise<N>(out, in, flat_stride);
  for (int k = 0; k < N; ++k) d.flat_stride[k] = flat_stride[k];
  const LoopPlan<N> p = plan_elementwise<N>(out, in);
  d.rank = p.rank;
  d.index32 = d.numel <= std::numeric_limits<int32_t>::max();
  for (int i = 0; i < p.rank; ++i) {
    d.shape[i] = p.shape[i];
    if (d.index32) d.extents[i] = FastDivmod(static_cast<uint32_t>(p.shape[i]));
    for (int k = 0; k < N; ++k) d.strides[k][i] = p.strides[k][i];
  }
  return d;
}

template <int N, class Body>
__global__ void elementwise_kernel(DevicePlan<N> plan, Body body) {
  const int64_t step = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
       i < plan.numel; i += step) {
    int64_t off[N];
    plan.offsets(i, off);
    body(off);
  }
}

// ---- the vector path ------------------------------------------------------

/** W elements of T, aligned as one load: float4, double2, ... */
template <class T, int W>
struct alignas(sizeof(T) * W) Pack {
  T v[W];
};

/**
 * Elements [i, i + W) of p, or W copies of p[i] where p is broadcast along
 * the vector. Plain loads, not __ldcs: an eager program's next op usually
 * reads this op's output, and evict-first hints would push it out of L2.
 */
template <int W, class T>
__device__ Pack<T, W> load_pack(const T* p, int64_t i, bool broadcast) {
  if (broadcast) {
    Pack<T, W> r;
    const T x = p[i];
#pragma unroll
    for (int j = 0; j < W; ++j) r.v[j] = x;
    return r;
  }
  return *reinterpret_cast<const Pack<T, W>*>(p + i);
}
template <int W, class T>
__device__ void store_pack(T* p, int64_t i, const Pack<T, W>& x) {
  *reinterpret_cast<Pack<T, W>*>(p + i) = x;
}

/** An operand's address and element size, for the alignment test. */
struct OperandAddress {
  const void* data;
  size_t itemsize;
};

/**
 * A body that can take the vector path: kWidth elements per vector (16
 * bytes of its widest operand), vector(off, broadcast) for the kWidth
 * elements from operand k's offset off[k] (bit k of broadcast: operand k
 * repeats its element at off[k] along the vector), and the operands'
 * addresses, output first.
 */
template <class Body, int N>
concept VectorBody = requires(const Body& b, const int64_t* off,
                              uint32_t mask) {
  { Body::kWidth } -> std::convertible_to<int>;
  b.vector(off, mask);
  { b.addresses() } -> std::same_as<std::array<OperandAddress, N>>;
};

template <int N, class Body>
__global__ void __launch_bounds__(256)
    vector_kernel(Body body, uint32_t broadcast, int vectors, int tail_begin,
                  int numel) {
  constexpr int W = Body::kWidth;
  const int first = int(blockIdx.x * blockDim.x + threadIdx.x);
  const int step = int(gridDim.x * blockDim.x);
  for (int v = first; v < vectors; v += step) {
    int64_t off[N];
    for (int k = 0; k < N; ++k)
      off[k] = (broadcast >> k) & 1u ? 0 : int64_t(v) * W;
    body.vector(off, broadcast);
  }
  // Fewer than W elements are left; the first threads take one each. The
  // count is compared first: tail_begin + first overflows int for the
  // grid's later threads when numel is near 2^31.
  if (first < numel - tail_begin) {
    const int i = tail_begin + first;
    int64_t off[N];
    for (int k = 0; k < N; ++k) off[k] = (broadcast >> k) & 1u ? 0 : i;
    body(off);
  }
}

/**
 * Launches the vector path and returns true when the plan is flat, the
 * count fits 32 bits and every non-broadcast operand starts a vector.
 */
template <int N, class Body>
bool launch_vector(const DevicePlan<N>& plan, const Body& body,
                   cudaStream_t stream) {
  if (!plan.flat || !vector_index_fits(plan.numel)) return false;
  constexpr int W = Body::kWidth;
  const std::array<OperandAddress, N> addresses = body.addresses();
  uint32_t broadcast = 0;
  for (int k = 0; k < N; ++k) {
    if (plan.flat_stride[k] == 0) {
      broadcast |= 1u << k;
      continue;
    }
    const auto address = reinterpret_cast<uintptr_t>(addresses[k].data);
    if (!vector_aligned(address, addresses[k].itemsize, W)) return false;
  }
  const VectorSplit split = vector_split(plan.numel, W);
  constexpr int kThreads = 256;
  // At least one block: its first threads take the tail (< W elements).
  const int64_t blocks =
      std::clamp<int64_t>((split.vectors + kThreads - 1) / kThreads, 1, 8192);
  vector_kernel<N><<<int(blocks), kThreads, 0, stream>>>(
      body, broadcast, int(split.vectors), int(split.tail_begin),
      int(plan.numel));
  TAPEFLOW_CUDA_CHECK(cudaGetLastError());
  return true;
}

/** The vectors of a loop that row_vectors_fit, grid-stride. */
template <int N, class Body>
__global__ void __launch_bounds__(256)
    row_vector_kernel(DevicePlan<N> plan, Body body, FastDivmod per_row,
                      uint32_t inner_broadcast, int vectors) {
  const int step = int(gridDim.x * blockDim.x);
  for (int v = int(blockIdx.x * blockDim.x + threadIdx.x); v < vectors;
       v += step) {
    int64_t off[N];
    row_vector_offsets<N>(uint32_t(v), per_row, Body::kWidth, plan.rank,
                          plan.extents, plan.strides, inner_broadcast, off);
    body.vector(off, inner_broadcast);
  }
}

/**
 * Launches the row-vector path and returns true where the non-flat plan's
 * rows are contiguous or broadcast in every operand and the contiguous ones
 * start vectors (core/strided_offsets.hpp): a bias row or column over a
 * matrix reads and writes 16 bytes at a time, with one index split per
 * vector rather than per element.
 */
template <int N, class Body>
bool launch_row_vectors(const DevicePlan<N>& plan, const Body& body,
                        cudaStream_t stream) {
  constexpr int W = Body::kWidth;
  uint32_t inner_broadcast = 0;
  if (plan.flat || !plan.index32 ||
      !row_vectors_fit<N>(plan.rank, plan.shape, plan.strides, W,
                          inner_broadcast) ||
      (inner_broadcast & 1u) != 0)  // an output written once per element
    return false;
  const std::array<OperandAddress, N> addresses = body.addresses();
  for (int k = 0; k < N; ++k) {
    const auto address = reinterpret_cast<uintptr_t>(addresses[k].data);
    if (!((inner_broadcast >> k) & 1u) &&
        !vector_aligned(address, addresses[k].itemsize, W))
      return false;
  }
  const int64_t per_row = plan.shape[plan.rank - 1] / W;
  const int64_t vectors = plan.numel / W;
  constexpr int kThreads = 256;
  const int64_t blocks =
      std::clamp<int64_t>((vectors + kThreads - 1) / kThreads, 1, 8192);
  row_vector_kernel<N><<<int(blocks), kThreads, 0, stream>>>(
      plan, body, FastDivmod(uint32_t(per_row)), inner_broadcast, int(vectors));
  TAPEFLOW_CUDA_CHECK(cudaGetLastError());
  return true;
}

// ---- the transposed-tile path ---------------------------------------------

/**
 * A body whose inputs can be read from elsewhere: set_operand(k, p) points
 * operand k (1 for the first input) at p, of the operand's element type;
 * kWidth as for VectorBody (4 or more: no operand wider than 4 bytes).
 */
template <class Body, int N>
concept RebindableBody = requires(Body& b, const void* p) {
  { Body::kWidth } -> std::convertible_to<int>;
  b.set_operand(1, p);
  { b.addresses() } -> std::same_as<std::array<OperandAddress, N>>;
};

constexpr int kTile = 32, kTileRows = 8;

/** One element's bits, by its size, widened: tiles stage any element type. */
template <class Bits>
__device__ Bits load_bits(const char* from, int size) {
  switch (size) {
    case 1:
      return *reinterpret_cast<const uint8_t*>(from);
    case 2:
      return *reinterpret_cast<const uint16_t*>(from);
    case 4:
      return *reinterpret_cast<const uint32_t*>(from);
    default:  // 8 bytes: 64-bit slots only (a body's kWidth below 4)
      if constexpr (sizeof(Bits) == 8) {
        return *reinterpret_cast<const uint64_t*>(from);
      } else {
        __trap();  // a kWidth that ignores an 8-byte operand: loud, not cut
        return 0;
      }
  }
}
template <class Bits>
__device__ void store_bits(char* to, Bits bits, int size) {
  switch (size) {
    case 1:
      *reinterpret_cast<uint8_t*>(to) = static_cast<uint8_t>(bits);
      break;
    case 2:
      *reinterpret_cast<uint16_t*>(to) = static_cast<uint16_t>(bits);
      break;
    case 4:
      *reinterpret_cast<uint32_t*>(to) = static_cast<uint32_t>(bits);
      break;
    default:
      if constexpr (sizeof(Bits) == 8)
        *reinterpret_cast<uint64_t*>(to) = bits;
      else
        __trap();
  }
}

/** The operands' addresses and element sizes, as a kernel argument. */
template <int N>
struct TileOperands {
  const char* data[N];
  int itemsize[N];
};

/**
 * The loop's last two axes in 32 x 32 tiles (x: columns, y: rows, z: the
 * outer axes, grid-stride). Every input's tile is staged in shared memory,
 * a transposed one read along its contiguous axis, the others along the
 * output's rows (core/strided_offsets.hpp's tile_cell), so that every read
 * and the output's writes coalesce (the transpose kernel of CUDA's samples,
 * under any body). A thread issues all its loads of a tile before it
 * stores any: stores into shared memory between them (or the body's stores
 * into the output, which the compiler cannot tell apart from an input)
 * would hold one load in flight per thread, too few to keep the memory busy.
 */
template <int N, class Body>
__global__ void __launch_bounds__(kTile* kTileRows)
    transposed_tile_kernel(DevicePlan<N> plan, Body body, uint32_t transposed,
                           TileOperands<N> operands, int64_t outer) {
  // Elements of up to 4 bytes are staged in 32 bits (half the registers).
  using Bits = std::conditional_t<(Body::kWidth >= 4), uint32_t, uint64_t>;
  constexpr int kSteps = kTile / kTileRows;
  __shared__ Bits tiles[N - 1][kTile][kTile + 1];  // input k's is k - 1
  const int r = plan.rank;
  const int64_t rows = plan.shape[r - 2], cols = plan.shape[r - 1];
  const int64_t i0 = int64_t(blockIdx.y) * kTile,
                j0 = int64_t(blockIdx.x) * kTile;
  const int tx = int(threadIdx.x), ty = int(threadIdx.y);
  Body local = body;
  for (int k = 1; k < N; ++k) local.set_operand(k, &tiles[k - 1][0][0]);
  for (int64_t z = blockIdx.z; z < outer; z += gridDim.z) {
    int64_t base[N];
    strided_offsets<N>(uint32_t(z), r - 2, plan.extents, plan.strides, base);
    Bits staged[N - 1][kSteps];
#pragma unroll
    for (int k = 1; k < N; ++k) {
      const bool across = (transposed >> k) & 1u;
      const int size = operands.itemsize[k];
#pragma unroll
      for (int step = 0; step < kSteps; ++step) {
        const TileCell cell = tile_cell(across, tx, ty, step, kTileRows);
        const int64_t row = i0 + cell.row, column = j0 + cell.column;
        staged[k - 1][step] =
            row < rows && column < cols
                ? load_bits<Bits>(operands.data[k] +
                                      (base[k] + row * plan.strides[k][r - 2] +
                                       column * plan.strides[k][r - 1]) *
                                          size,
                                  size)
                : Bits(0);
      }
    }
#pragma unroll
    for (int k = 1; k < N; ++k) {
      const bool across = (transposed >> k) & 1u;
      const int size = operands.itemsize[k];
      char* tile = reinterpret_cast<char*>(&tiles[k - 1][0][0]);
#pragma unroll
      for (int step = 0; step < kSteps; ++step) {
        const TileCell cell = tile_cell(across, tx, ty, step, kTileRows);
        store_bits(tile + tile_slot(cell, kTile) * size, staged[k - 1][step],
                   size);
      }
    }
    __syncthreads();
    // The output and the inputs' tiles along the output's rows.
#pragma unroll
    for (int step = 0; step < kSteps; ++step) {
      const TileCell cell = tile_cell(false, tx, ty, step, kTileRows);
      const int64_t row = i0 + cell.row, column = j0 + cell.column;
      if (row >= rows || column >= cols) continue;
      int64_t off[N];
      off[0] = base[0] + row * plan.strides[0][r - 2] +
               column * plan.strides[0][r - 1];
      for (int k = 1; k < N; ++k) off[k] = tile_slot(cell, kTile);
      local(off);
    }
    __syncthreads();  // the next outer index restages the tiles
  }
}

/**
 * Launches the transposed-tile path and returns true where some input is
 * read across its contiguous axis (core/strided_offsets.hpp).
 */
template <int N, class Body>
bool launch_transposed_tiles(const DevicePlan<N>& plan, const Body& body,
                             cudaStream_t stream) {
  if (plan.flat || !plan.index32) return false;
  const uint32_t transposed = transposed_operands<N>(plan.rank, plan.strides);
  if (transposed == 0) return false;
  const int64_t rows = plan.shape[plan.rank - 2];
  const int64_t cols = plan.shape[plan.rank - 1];
  constexpr int64_t kMaxGridYZ = 65535;
  const int64_t row_tiles = (rows + kTile - 1) / kTile;
  if (row_tiles > kMaxGridYZ) return false;
  TileOperands<N> operands{};
  const std::array<OperandAddress, N> addresses = body.addresses();
  for (int k = 0; k < N; ++k) {
    operands.data[k] = static_cast<const char*>(addresses[k].data);
    operands.itemsize[k] = int(addresses[k].itemsize);
  }
  const int64_t outer = plan.numel / (rows * cols);
  const dim3 grid(unsigned((cols + kTile - 1) / kTile), unsigned(row_tiles),
                  unsigned(std::min(outer, kMaxGridYZ)));
  transposed_tile_kernel<N><<<grid, dim3(kTile, kTileRows), 0, stream>>>(
      plan, body, transposed, operands, outer);
  TAPEFLOW_CUDA_CHECK(cudaGetLastError());
  return true;
}

/** Runs body(offsets) for every element of `out` on out's GPU. */
template <int N, class Body>
void launch_elementwise(const Tensor& out,
                        const std::array<const Tensor*, N - 1>& in, Body body) {
  if (out.numel() == 0) return;
  const cudaStream_t stream = activate(out.device().index);
  const DevicePlan<N> plan = device_plan<N>(out, in);
  if constexpr (VectorBody<Body, N>)
    if (launch_vector<N>(plan, body, stream) ||
        launch_row_vectors<N>(plan, body, stream))
      return;
  if constexpr (RebindableBody<Body, N>)
    if (launch_transposed_tiles<N>(plan, body, stream)) return;
  constexpr int kThreads = 256;
  const int64_t blocks =
      std::min<int64_t>((plan.numel + kThreads - 1) / kThreads, 8192);
  elementwise_kernel<N><<<int(blocks), kThreads, 0, stream>>>(plan, body);
  TAPEFLOW_CUDA_CHECK(cudaGetLastError());
}

}  // namespace tapeflow::cuda
