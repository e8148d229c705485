// argmax and argmin on the GPU: one warp per output. Each lane scans a
// strided share of the reduced axis, then the lanes merge by shuffles in a
// fixed tree with core/arg_reduce_rule.hpp's order, which picks what the
// CPU's scan picks (the first NaN, else the first extreme).
#include "check.hpp"
#include "context.hpp"
#include "core/arg_reduce_rule.hpp"
#include "core/dtype_dispatch.hpp"
#include "core/op_error.hpp"
#include "grid.cuh"
#include "ops/reduce_ops.hpp"

namespace tapeflow::cuda {
namespace {

constexpr int kWarp = 32;

/** The kept axes of x: output k's first element is at offset(k). */
struct KeptAxes {
  int rank = 0;
  int64_t shape[kMaxRank];
  int64_t strides[kMaxRank];
  __device__ int64_t offset(int64_t k) const {
    int64_t off = 0;
    for (int d = rank - 1; d >= 0; --d) {
      off += (k % shape[d]) * strides[d];
      k /= shape[d];
    }
    return off;
  }
};

template <class T>
__device__ ArgCandidate<T> shuffle_down(const ArgCandidate<T>& c, int delta) {
  return {__shfl_down_sync(0xffffffffu, c.value, delta),
          static_cast<int64_t>(__shfl_down_sync(
              0xffffffffu, static_cast<long long>(c.index), delta))};
}

template <bool kMax, class T>
__global__ void arg_reduce_kernel(KeptAxes kept, int64_t outputs, int64_t n,
                                  int64_t step, const T* x, int64_t* out) {
  const int lane = threadIdx.x % kWarp;
  const int64_t warps = grid_step() / kWarp;
  for (int64_t k = grid_first() / kWarp; k < outputs; k += warps) {
    const T* p = x + kept.offset(k);
    ArgCandidate<T> best{T(0), -1};
    for (int64_t j = lane; j < n; j += kWarp)
      best = arg_better<kMax>(best, ArgCandidate<T>{p[j * step], j});
    for (int delta = kWarp / 2; delta > 0; delta /= 2)
      best = arg_better<kMax>(best, shuffle_down(best, delta));
    if (lane == 0) out[k] = best.index;
  }
}

template <bool kMax, class Op>
void arg_reduce(const Op& op, Inputs in, const Outputs& outs) {
  const Tensor& x = in[0];
  const int64_t outputs = outs[0].numel();
  if (outputs == 0) return;
  KeptAxes kept;
  for (int64_t i = 0; i < x.rank(); ++i) {
    if (i == op.axis) continue;
    kept.shape[kept.rank] = x.shape()[i];
    kept.strides[kept.rank] = x.strides()[i];
    ++kept.rank;
  }
  const int64_t n = x.shape()[op.axis], step = x.strides()[op.axis];
  dispatch_numeric(x.dtype(), Op::name, [&](auto tag) {
    using T = decltype(tag);
    arg_reduce_kernel<kMax, T><<<blocks_for(outputs * kWarp), kBlockThreads, 0,
                                 activate(x.device().index)>>>(
        kept, outputs, n, step, static_cast<const T*>(x.raw_data()),
        static_cast<int64_t*>(outs[0].raw_data()));
    TAPEFLOW_CUDA_CHECK(cudaGetLastError());
  });
}

}  // namespace

void register_arg_reduce(Registry& r) {
  r.set<ArgMax>(DeviceType::cuda, arg_reduce<true, ArgMax>, "cuda");
  r.set<ArgMin>(DeviceType::cuda, arg_reduce<false, ArgMin>, "cuda");
}

}  // namespace tapeflow::cuda
