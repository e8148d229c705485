#pragma once
// Launch shapes of the one-thread-per-item kernels (pooling, batch norm,
// index ops, optimizer updates): a grid-stride loop over n items, so any n
// fits a grid whose size is capped, and every launch goes on the device's
// stream (context.hpp).
#include <algorithm>
#include <cstdint>

namespace tapeflow::cuda {

constexpr int kBlockThreads = 256;

/** Blocks for n items, one per thread, capped (the kernels grid-stride). */
inline unsigned blocks_for(int64_t n) {
  constexpr int64_t kMaxBlocks = int64_t(1) << 16;
  return static_cast<unsigned>(std::clamp<int64_t>(
      (n + kBlockThreads - 1) / kBlockThreads, 1, kMaxBlocks));
}

/** This thread's first item of a grid-stride loop over x. */
__device__ inline int64_t grid_first() {
  return int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
}
/** The step of a grid-stride loop over x. */
__device__ inline int64_t grid_step() {
  return int64_t(gridDim.x) * blockDim.x;
}

}  // namespace tapeflow::cuda
