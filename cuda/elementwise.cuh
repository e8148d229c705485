#pragma once
// Elementwise launches over the shared LoopPlan: a grid-stride loop whose
// index is decomposed into per-operand offsets (skipped when all are flat).
#include <array>
#include <cstdint>

#include "check.hpp"
#include "context.hpp"
#include "core/loop_plan.hpp"

namespace tapeflow::cuda {

template <int N>
struct DevicePlan {
  int rank;
  bool flat;
  int64_t flat_stride[N];  // 1, or 0 for a single broadcast element
  int64_t numel;
  int64_t shape[kMaxRank];
  int64_t strides[N][kMaxRank];

  __device__ void offsets(int64_t i, int64_t (&off)[N]) const {
    if (flat) {
      for (int k = 0; k < N; ++k) off[k] = i * flat_stride[k];
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
  for (int i = 0; i < p.rank; ++i) {
    d.shape[i] = p.shape[i];
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

/** Runs body(offsets) for every element of `out` on out's GPU. */
template <int N, class Body>
void launch_elementwise(const Tensor& out,
                        const std::array<const Tensor*, N - 1>& in, Body body) {
  if (out.numel() == 0) return;
  const cudaStream_t stream = activate(out.device().index);
  const DevicePlan<N> plan = device_plan<N>(out, in);
  constexpr int kThreads = 256;
  const int64_t blocks =
      std::min<int64_t>((plan.numel + kThreads - 1) / kThreads, 8192);
  elementwise_kernel<N><<<int(blocks), kThreads, 0, stream>>>(plan, body);
  TAPEFLOW_CUDA_CHECK(cudaGetLastError());
}

}  // namespace tapeflow::cuda
