// The floor under bench_cuda.cpp's small-op case: the same chain of dependent
// ops on 1K floats (alternately y * c and y + b) as bare kernel launches on
// one stream, between two preallocated buffers, with no dispatch, allocation
// or tape in between. What tapeflow's chain takes beyond it is the library's.
#include "small_ops_raw.hpp"

namespace tapeflow_bench_cuda {
namespace {

constexpr int kThreads = 256;

template <bool kAdd>
__global__ void combine_kernel(const float* x, const float* operand, float* y,
                               int n) {
  const int i = blockIdx.x * kThreads + threadIdx.x;
  if (i < n) y[i] = kAdd ? x[i] + operand[i] : x[i] * operand[i];
}

}  // namespace

cudaError_t launch_small_op_chain(const SmallOpChain& chain,
                                  cudaStream_t stream) {
  const int blocks = (chain.n + kThreads - 1) / kThreads;
  const float* x = chain.c;
  for (int i = 0; i < chain.ops; ++i) {
    float* y = i % 2 ? chain.pong : chain.ping;
    if (i % 2)
      combine_kernel<true>
          <<<blocks, kThreads, 0, stream>>>(x, chain.b, y, chain.n);
    else
      combine_kernel<false>
          <<<blocks, kThreads, 0, stream>>>(x, chain.c, y, chain.n);
    x = y;
  }
  return cudaGetLastError();
}

}  // namespace tapeflow_bench_cuda
