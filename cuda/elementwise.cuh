#pragma once
// Elementwise launches over the shared LoopPlan: a grid-stride loop whose
// index is decomposed into per-operand offsets (skipped when all are flat;
// core/strided_offsets.hpp below 2³¹ elements).
// Flat launches of bodies that can (below) take a vector path instead: one
// 128-bit load per operand and one 128-bit store per step, four floats or
// two doubles at a time (CUDA.md §4, llm.c's Packed128).
#include <algorithm>
#include <array>
#include <concepts>
#include <cstdint>
#include <limits>

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
 * Elements [i, i + W) of p, or W copies of p[0] where p is a broadcast
 * scalar. Plain loads, not __ldcs: an eager program's next op usually reads
 * this op's output, and evict-first hints would push it out of L2.
 */
template <int W, class T>
__device__ Pack<T, W> load_pack(const T* p, int64_t i, bool broadcast) {
  if (broadcast) {
    Pack<T, W> r;
#pragma unroll
    for (int j = 0; j < W; ++j) r.v[j] = p[0];
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
 * bytes of its widest operand), vector(i, broadcast) for elements
 * [i, i + kWidth) (bit k of broadcast: operand k is a scalar), and the
 * operands' addresses, output first.
 */
template <class Body, int N>
concept VectorBody = requires(const Body& b, int64_t i, uint32_t mask) {
  { Body::kWidth } -> std::convertible_to<int>;
  b.vector(i, mask);
  { b.addresses() } -> std::same_as<std::array<OperandAddress, N>>;
};

template <int N, class Body>
__global__ void __launch_bounds__(256)
    vector_kernel(Body body, uint32_t broadcast, int vectors, int tail_begin,
                  int numel) {
  constexpr int W = Body::kWidth;
  const int first = int(blockIdx.x * blockDim.x + threadIdx.x);
  const int step = int(gridDim.x * blockDim.x);
  for (int v = first; v < vectors; v += step)
    body.vector(int64_t(v) * W, broadcast);
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

/** Runs body(offsets) for every element of `out` on out's GPU. */
template <int N, class Body>
void launch_elementwise(const Tensor& out,
                        const std::array<const Tensor*, N - 1>& in, Body body) {
  if (out.numel() == 0) return;
  const cudaStream_t stream = activate(out.device().index);
  const DevicePlan<N> plan = device_plan<N>(out, in);
  if constexpr (VectorBody<Body, N>)
    if (launch_vector<N>(plan, body, stream)) return;
  constexpr int kThreads = 256;
  const int64_t blocks =
      std::min<int64_t>((plan.numel + kThreads - 1) / kThreads, 8192);
  elementwise_kernel<N><<<int(blocks), kThreads, 0, stream>>>(plan, body);
  TAPEFLOW_CUDA_CHECK(cudaGetLastError());
}

}  // namespace tapeflow::cuda
