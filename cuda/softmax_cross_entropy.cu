// The fused sparse softmax cross entropy on the GPU: one block per row
// (grid-stride over the rows), its threads striding the classes. The row's
// maximum and its sum of exp(x - max) combine through CUB's BlockReduce (a
// fixed tree: the same bits on every run); the threads then scale their
// exponentials into softmax - one_hot, and thread 0 writes the loss
// (core/softmax_cross_entropy_math.hpp, shared with the CPU kernel).
#include <algorithm>
#include <cmath>
#include <cub/block/block_reduce.cuh>

#include "check.hpp"
#include "context.hpp"
#include "core/creation_internal.hpp"
#include "core/dtype_dispatch.hpp"
#include "core/softmax_cross_entropy_math.hpp"
#include "grid.cuh"
#include "ops/nn/loss_ops.hpp"

namespace tapeflow::cuda {
namespace {

/** The larger of two values; a NaN reaches the loss through the sum. */
struct MaxOf {
  template <class T>
  __device__ T operator()(T a, T b) const {
    return b > a ? b : a;
  }
};

template <class T, class L>
__global__ void __launch_bounds__(kBlockThreads)
    softmax_cross_entropy_rows(int64_t rows, int64_t classes, const T* x,
                               const L* labels, T* loss, T* backprop) {
  using BlockReduce = cub::BlockReduce<T, kBlockThreads>;
  __shared__ typename BlockReduce::TempStorage scratch;
  __shared__ T row_max, row_sum;
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* xr = x + r * classes;
    T* br = backprop + r * classes;
    T m = T(-INFINITY);
    for (int64_t j = threadIdx.x; j < classes; j += kBlockThreads)
      m = MaxOf{}(m, xr[j]);
    m = BlockReduce(scratch).Reduce(m, MaxOf{});
    if (threadIdx.x == 0) row_max = m;
    __syncthreads();  // row_max is read, scratch reused
    m = row_max;
    T s = 0;
    for (int64_t j = threadIdx.x; j < classes; j += kBlockThreads) {
      const T e = exp(xr[j] - m);
      br[j] = e;
      s += e;
    }
    s = BlockReduce(scratch).Sum(s);
    if (threadIdx.x == 0) row_sum = s;
    __syncthreads();
    s = row_sum;
    const T inv = T(1) / s;
    const int64_t label = labels[r];
    const bool ok = label_in_range(label, classes);
    for (int64_t j = threadIdx.x; j < classes; j += kBlockThreads)
      br[j] = br[j] * inv - (ok && j == label ? T(1) : T(0));
    if (threadIdx.x == 0)
      loss[r] = cross_entropy_loss(m, s, ok ? xr[label] : T(0), ok);
    __syncthreads();  // the next row rewrites row_max, row_sum and scratch
  }
}

template <class T, class L>
void launch(const Tensor& logits, const Tensor& labels, const Tensor& loss,
            const Tensor& backprop) {
  const int64_t rows = logits.shape()[0], classes = logits.shape()[1];
  constexpr int64_t kMaxBlocks = 65535;
  softmax_cross_entropy_rows<T, L>
      <<<static_cast<unsigned>(std::min(rows, kMaxBlocks)), kBlockThreads, 0,
         activate(logits.device().index)>>>(
          rows, classes, static_cast<const T*>(logits.raw_data()),
          static_cast<const L*>(labels.raw_data()),
          static_cast<T*>(loss.raw_data()),
          static_cast<T*>(backprop.raw_data()));
  TAPEFLOW_CUDA_CHECK(cudaGetLastError());
}

void sparse_softmax_cross_entropy(const SparseSoftmaxCrossEntropy& op,
                                  Inputs in, const Outputs& out) {
  if (in[0].shape()[0] == 0) return;
  const Tensor logits = materialize(in[0]), labels = materialize(in[1]);
  dispatch_floating(logits.dtype(), op.name, [&](auto tag) {
    using T = decltype(tag);
    if (labels.dtype() == int32)
      launch<T, int32_t>(logits, labels, out[0], out[1]);
    else
      launch<T, int64_t>(logits, labels, out[0], out[1]);
  });
}

}  // namespace

void register_losses(Registry& r) {
  r.set<SparseSoftmaxCrossEntropy>(DeviceType::cuda,
                                   sparse_softmax_cross_entropy, "cuda");
}

}  // namespace tapeflow::cuda
