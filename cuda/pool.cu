// Pooling on the GPU, rank 1-3 as (planes, depth, rows, columns) through
// the CPU's window math (core/pool_window.hpp, core/pool_gather.hpp): the
// forward passes take one thread per output, with the CPU's first-maximum
// rule and int32 workspace; the gradients take one thread per input element
// and gather dy from the windows that hold (avg) or chose (max) it, in the
// CPU's order: no atomics, and the same sums on every run.
#include "check.hpp"
#include "context.hpp"
#include "core/creation_internal.hpp"
#include "core/dtype_dispatch.hpp"
#include "core/pool_gather.hpp"
#include "grid.cuh"
#include "ops/nn/pool_ops.hpp"

namespace tapeflow::cuda {
namespace {

/** The window of output `o` of a plane. */
__device__ inline PoolSpan span_of(const PoolGeometry& g, int64_t o) {
  int64_t pos[3];
  pool_output_position(g, o, pos);
  return pool_span(g, pos);
}

template <class T>
__global__ void max_pool_kernel(PoolGeometry g, const T* x, T* y, int32_t* ws) {
  const int64_t n = g.planes * g.out_size();
  for (int64_t i = grid_first(); i < n; i += grid_step()) {
    const int64_t p = i / g.out_size(), o = i % g.out_size();
    const T* plane = x + p * g.in_size();
    const PoolSpan w = span_of(g, o);
    const int64_t at = pool_argmax(g, plane, w);
    y[i] = plane[at];
    if (ws) ws[i] = pool_window_index(g, w, at);
  }
}

template <class T>
__global__ void avg_pool_kernel(PoolGeometry g, bool include_pad, const T* x,
                                T* y) {
  const int64_t n = g.planes * g.out_size();
  for (int64_t i = grid_first(); i < n; i += grid_step()) {
    const int64_t p = i / g.out_size(), o = i % g.out_size();
    const PoolSpan w = span_of(g, o);
    T acc = 0;
    pool_sum(g, x + p * g.in_size(), w, acc);
    y[i] = acc / T(w.count(include_pad));
  }
}

__global__ void max_pool_argmax_kernel(PoolGeometry g, int64_t channels,
                                       bool include_batch, const int32_t* ws,
                                       int64_t* out) {
  const int64_t n = g.planes * g.out_size();
  for (int64_t i = grid_first(); i < n; i += grid_step()) {
    const int64_t p = i / g.out_size(), o = i % g.out_size();
    const int64_t j = pool_window_element(g, span_of(g, o), ws[i]);
    out[i] = pool_tf_argmax(g, p, j, channels, include_batch);
  }
}

template <class T>
__global__ void max_pool_gather_kernel(PoolGeometry g, const T* gx,
                                       const int32_t* ws, T* y) {
  const int64_t n = g.planes * g.out_size();
  for (int64_t i = grid_first(); i < n; i += grid_step()) {
    const int64_t p = i / g.out_size(), o = i % g.out_size();
    y[i] = gx[p * g.in_size() + pool_window_element(g, span_of(g, o), ws[i])];
  }
}

template <class T>
__global__ void max_pool_grad_kernel(PoolGeometry g, const T* dy,
                                     const int32_t* ws, T* dx) {
  const int64_t n = g.planes * g.in_size();
  for (int64_t i = grid_first(); i < n; i += grid_step())
    dx[i] = max_pool_gathered_grad(g, i / g.in_size(), i % g.in_size(), dy, ws);
}

template <class T>
__global__ void avg_pool_grad_kernel(PoolGeometry g, bool include_pad,
                                     const T* dy, T* dx) {
  const int64_t n = g.planes * g.in_size();
  for (int64_t i = grid_first(); i < n; i += grid_step())
    dx[i] = avg_pool_gathered_grad(g, i / g.in_size(), i % g.in_size(), dy,
                                   include_pad);
}

template <class T>
const T* in_ptr(const Tensor& t) {
  return static_cast<const T*>(t.raw_data());
}
template <class T>
T* out_ptr(const Tensor& t) {
  return static_cast<T*>(t.raw_data());
}

void max_pool(const MaxPool& op, Inputs in, const Outputs& outs) {
  const Tensor x = materialize(in[0]);
  const PoolGeometry g = op.w.geometry(x.shape());
  const int64_t n = g.planes * g.out_size();
  if (n == 0) return;
  int32_t* ws = op.with_workspace ? out_ptr<int32_t>(outs[1]) : nullptr;
  const int device = x.device().index;
  dispatch_floating(x.dtype(), op.name, [&](auto tag) {
    using T = decltype(tag);
    max_pool_kernel<T><<<blocks_for(n), kBlockThreads, 0, activate(device)>>>(
        g, in_ptr<T>(x), out_ptr<T>(outs[0]), ws);
    TAPEFLOW_CUDA_CHECK(cudaGetLastError());
  });
}

void avg_pool(const AvgPool& op, Inputs in, const Outputs& outs) {
  const Tensor x = materialize(in[0]);
  const PoolGeometry g = op.w.geometry(x.shape());
  const int64_t n = g.planes * g.out_size();
  if (n == 0) return;
  const int device = x.device().index;
  dispatch_floating(x.dtype(), op.name, [&](auto tag) {
    using T = decltype(tag);
    avg_pool_kernel<T><<<blocks_for(n), kBlockThreads, 0, activate(device)>>>(
        g, op.count_include_pad, in_ptr<T>(x), out_ptr<T>(outs[0]));
    TAPEFLOW_CUDA_CHECK(cudaGetLastError());
  });
}

void max_pool_argmax(const MaxPoolArgmax& op, Inputs in, const Outputs& outs) {
  const Tensor ws = materialize(in[0]);
  const PoolGeometry g = op.w.geometry(op.input_shape);
  const int64_t n = g.planes * g.out_size();
  if (n == 0) return;
  max_pool_argmax_kernel<<<blocks_for(n), kBlockThreads, 0,
                           activate(ws.device().index)>>>(
      g, op.input_shape[1], op.include_batch_in_index, in_ptr<int32_t>(ws),
      out_ptr<int64_t>(outs[0]));
  TAPEFLOW_CUDA_CHECK(cudaGetLastError());
}

void max_pool_gather(const MaxPoolGather& op, Inputs in, const Outputs& outs) {
  const Tensor gx = materialize(in[0]), ws = materialize(in[1]);
  const PoolGeometry g = op.w.geometry(gx.shape());
  const int64_t n = g.planes * g.out_size();
  if (n == 0) return;
  const int device = gx.device().index;
  dispatch_floating(gx.dtype(), op.name, [&](auto tag) {
    using T = decltype(tag);
    max_pool_gather_kernel<T>
        <<<blocks_for(n), kBlockThreads, 0, activate(device)>>>(
            g, in_ptr<T>(gx), in_ptr<int32_t>(ws), out_ptr<T>(outs[0]));
    TAPEFLOW_CUDA_CHECK(cudaGetLastError());
  });
}

void max_pool_scatter(const MaxPoolScatter& op, Inputs in,
                      const Outputs& outs) {
  const Tensor dy = materialize(in[0]), ws = materialize(in[1]);
  const PoolGeometry g = op.w.geometry(op.input_shape);
  const int64_t n = g.planes * g.in_size();
  if (n == 0) return;
  const int device = dy.device().index;
  dispatch_floating(dy.dtype(), op.name, [&](auto tag) {
    using T = decltype(tag);
    max_pool_grad_kernel<T>
        <<<blocks_for(n), kBlockThreads, 0, activate(device)>>>(
            g, in_ptr<T>(dy), in_ptr<int32_t>(ws), out_ptr<T>(outs[0]));
    TAPEFLOW_CUDA_CHECK(cudaGetLastError());
  });
}

void avg_pool_grad(const AvgPoolGrad& op, Inputs in, const Outputs& outs) {
  const Tensor dy = materialize(in[0]);
  const PoolGeometry g = op.w.geometry(op.input_shape);
  const int64_t n = g.planes * g.in_size();
  if (n == 0) return;
  const int device = dy.device().index;
  dispatch_floating(dy.dtype(), op.name, [&](auto tag) {
    using T = decltype(tag);
    avg_pool_grad_kernel<T>
        <<<blocks_for(n), kBlockThreads, 0, activate(device)>>>(
            g, op.count_include_pad, in_ptr<T>(dy), out_ptr<T>(outs[0]));
    TAPEFLOW_CUDA_CHECK(cudaGetLastError());
  });
}

}  // namespace

void register_pool(Registry& r) {
  constexpr auto gpu = DeviceType::cuda;
  r.set<MaxPool>(gpu, max_pool, "cuda");
  r.set<AvgPool>(gpu, avg_pool, "cuda");
  r.set<MaxPoolArgmax>(gpu, max_pool_argmax, "cuda");
  r.set<MaxPoolGather>(gpu, max_pool_gather, "cuda");
  r.set<MaxPoolScatter>(gpu, max_pool_scatter, "cuda");
  r.set<AvgPoolGrad>(gpu, avg_pool_grad, "cuda");
}

}  // namespace tapeflow::cuda
