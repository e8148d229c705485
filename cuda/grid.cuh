#pragma once
// Launch shapes of the one-thread-per-item kernels (pooling, batch norm,
// index ops, optimizer updates): a grid-stride loop over n items, so any n
// fits a grid whose size is capped, and every launch goes on the device's
// stream (context.hpp); and of the row-by-row kernels around the
// convolutions' GEMMs.
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

/**
 * The grid of a rows × cols kernel that walks rows along y and each row's
 * columns along x (grid-stride both ways): blocks along x for a row at 8
 * columns per thread, so that what a thread works out once per row (a
 * channel and tap, an image) is shared by several entries, and the rows up
 * to CUDA's limit on y.
 */
inline dim3 rows_grid(int64_t rows, int64_t cols) {
  constexpr int64_t kColumnsPerThread = 8, kMaxBlocksX = 4096,
                    kMaxGridY = 65535;
  constexpr int64_t per_block = kBlockThreads * kColumnsPerThread;
  const int64_t along_x =
      std::min((cols + per_block - 1) / per_block, kMaxBlocksX);
  return dim3(static_cast<unsigned>(std::max<int64_t>(1, along_x)),
              static_cast<unsigned>(std::clamp<int64_t>(rows, 1, kMaxGridY)));
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
