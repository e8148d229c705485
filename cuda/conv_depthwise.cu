// Depthwise convolutions (one input channel per group) by direct kernels
// over core/conv_depthwise.hpp's bodies, which CI runs on the host against
// the CPU's direct kernels: one thread per output element for the forward
// and the input gradient (a gather: no atomics), and for the filter
// gradient one block per (filter tap, slice of the N·P terms) reducing in a
// fixed tree, then a pass adding each tap's slices in order.
#include "check.hpp"
#include "context.hpp"
#include "conv.cuh"
#include "core/conv_depthwise.hpp"
#include "core/creation_internal.hpp"
#include "core/dtype_dispatch.hpp"
#include "grid.cuh"
#include "ops/nn/conv_ops.hpp"

namespace tapeflow::cuda {
namespace {

template <class T>
__global__ void forward_kernel(ConvGeometry g, const T* x, const T* w,
                               const T* bias, int64_t bias_stride, T* y) {
  const int64_t n = g.n * g.o * g.out_size();
  for (int64_t i = grid_first(); i < n; i += grid_step())
    depthwise_forward(g, x, w, bias, bias_stride, y, i);
}

template <class T>
__global__ void grad_input_kernel(ConvGeometry g, const T* dy, const T* w,
                                  T* dx) {
  const int64_t n = g.n * g.c * g.in_size();
  for (int64_t i = grid_first(); i < n; i += grid_step())
    depthwise_grad_input(g, dy, w, dx, i);
}

/** Block b reduces slice b % slices of filter row b / slices. */
template <class T>
__global__ void __launch_bounds__(DepthwiseFilterWork::kThreads)
    filter_partials_kernel(ConvGeometry g, const T* x, const T* dy,
                           DepthwiseFilterWork work, T* partials) {
  __shared__ T scratch[DepthwiseFilterWork::kThreads];
  DeviceBlock<T> block;
  const int64_t b = blockIdx.x;
  depthwise_filter_block(g, x, dy, work, b / work.slices, b % work.slices,
                         scratch, partials, block);
}

template <class T>
__global__ void filter_sum_kernel(ConvGeometry g, DepthwiseFilterWork work,
                                  const T* partials, T* dw) {
  for (int64_t row = grid_first(); row < work.rows; row += grid_step())
    depthwise_filter_sum(g, work, partials, dw, row);
}

template <class T>
void forward(const ConvGeometry& g, const ConvOperands& t, int device) {
  const int64_t n = g.n * g.o * g.out_size();
  const bool bias = t.bias.defined();
  forward_kernel<T><<<blocks_for(n), kBlockThreads, 0, activate(device)>>>(
      g, conv_in<T>(t.x), conv_in<T>(t.w), bias ? conv_in<T>(t.bias) : nullptr,
      bias ? t.bias.strides()[0] : 0, conv_out<T>(t.y));
  TAPEFLOW_CUDA_CHECK(cudaGetLastError());
}

template <class T>
void grad_input(const ConvGeometry& g, const ConvOperands& t, int device) {
  const int64_t n = g.n * g.c * g.in_size();
  grad_input_kernel<T><<<blocks_for(n), kBlockThreads, 0, activate(device)>>>(
      g, conv_in<T>(t.y), conv_in<T>(t.w), conv_out<T>(t.x));
  TAPEFLOW_CUDA_CHECK(cudaGetLastError());
}

template <class T>
void grad_filter(const ConvGeometry& g, const ConvOperands& t, int device) {
  const DepthwiseFilterWork work = depthwise_filter_work(g);
  // Scratch from the device's arena: freed here, reused only by work that
  // the stream orders after these kernels.
  const Tensor partials = empty_tensor(Shape({work.rows * work.slices}),
                                       t.w.dtype(), t.w.device(), Conv::name);
  filter_partials_kernel<T>
      <<<static_cast<unsigned>(work.rows * work.slices),
         DepthwiseFilterWork::kThreads, 0, activate(device)>>>(
          g, conv_in<T>(t.x), conv_in<T>(t.y), work, conv_out<T>(partials));
  TAPEFLOW_CUDA_CHECK(cudaGetLastError());
  filter_sum_kernel<T>
      <<<blocks_for(work.rows), kBlockThreads, 0, activate(device)>>>(
          g, work, conv_in<T>(partials), conv_out<T>(t.w));
  TAPEFLOW_CUDA_CHECK(cudaGetLastError());
}

}  // namespace

void conv_depthwise(ConvPass pass, const ConvGeometry& g,
                    const ConvOperands& t) {
  const int device = t.y.device().index;
  dispatch_floating(t.y.dtype(), Conv::name, [&](auto tag) {
    using T = decltype(tag);
    switch (pass) {
      case ConvPass::forward:
        return forward<T>(g, t, device);
      case ConvPass::grad_input:
        return grad_input<T>(g, t, device);
      case ConvPass::grad_filter:
        return grad_filter<T>(g, t, device);
    }
  });
}

}  // namespace tapeflow::cuda
