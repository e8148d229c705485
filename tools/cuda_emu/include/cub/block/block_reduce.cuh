#pragma once
// CUB's BlockReduce as the CUDA emulator runs it (tools/cuda_emu): each
// thread leaves its value in the temp storage, the block meets at a barrier,
// and thread 0 folds the values in thread order. As with CUB, only thread 0
// holds the result: the others get their own value back, so a kernel that
// reads the aggregate elsewhere fails its tests here too; and a reuse of the
// storage without a __syncthreads in between overwrites values that thread
// 0 has not folded yet when the emulator runs threads in reverse
// (CUDA_EMU_ORDER=reverse).
namespace cub {

enum BlockReduceAlgorithm {
  BLOCK_REDUCE_RAKING_COMMUTATIVE_ONLY,
  BLOCK_REDUCE_RAKING,
  BLOCK_REDUCE_WARP_REDUCTIONS,
};

template <class T, int kBlockThreads,
          BlockReduceAlgorithm = BLOCK_REDUCE_WARP_REDUCTIONS, int kBlockY = 1,
          int kBlockZ = 1>
class BlockReduce {
 public:
  struct TempStorage {
    T values[kBlockThreads * kBlockY * kBlockZ];
  };

  explicit BlockReduce(TempStorage& storage) : storage_(storage) {}

  template <class Op>
  T Reduce(T value, Op op) {
    constexpr unsigned kThreads = kBlockThreads * kBlockY * kBlockZ;
    // CUB's reduction is shaped by its template arguments, not the launch.
    if (blockDim.x * blockDim.y * blockDim.z != kThreads) __trap();
    const unsigned self =
        threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    storage_.values[self] = value;
    __syncthreads();
    if (self != 0) return value;
    T folded = storage_.values[0];
    for (unsigned t = 1; t < kThreads; ++t)
      folded = op(folded, storage_.values[t]);
    return folded;
  }

  T Sum(T value) {
    return Reduce(value, [](T a, T b) { return a + b; });
  }

 private:
  TempStorage& storage_;
};

}  // namespace cub
