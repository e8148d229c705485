#pragma once
// small_ops_raw.cu's launches, for bench_cuda.cpp (compiled by g++).
#include <cuda_runtime_api.h>

namespace tapeflow_bench_cuda {

/** Device buffers of n floats: the operands c and b, two for the results. */
struct SmallOpChain {
  const float* c;
  const float* b;
  float* ping;
  float* pong;
  int n;
  int ops;
};

/** Launches the chain's ops on `stream` (asynchronous, as tapeflow's). */
cudaError_t launch_small_op_chain(const SmallOpChain& chain,
                                  cudaStream_t stream);

}  // namespace tapeflow_bench_cuda
