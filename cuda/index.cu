// Index ops on the GPU. concat and slice_grad are strided copies into
// views of their output, reverse one from a view of its input read back to
// front (elementwise.cuh's launch, as Cast); gather and one_hot
// take one thread per output element; gather_grad adds rows with atomicAdd, so
// repeated indices sum in an order that varies from run to run: the one
// nondeterministic kernel of the backend (float sums may differ in their last
// bits). A bad gather index is never read: the kernel writes 0 (or skips the
// row) and reports it through deferred_error.hpp, and the next sync throws the
// IndexError the CPU throws at once. one_hot, as on the CPU, writes an
// out-of-range index as a row of off_value.
#include <cstdint>
#include <type_traits>

#include "check.hpp"
#include "context.hpp"
#include "core/convert_value.hpp"
#include "core/creation_internal.hpp"
#include "core/dtype_dispatch.hpp"
#include "deferred_error.hpp"
#include "elementwise.cuh"
#include "grid.cuh"
#include "ops/shape_ops.hpp"

namespace tapeflow::cuda {
namespace {

template <class U>
struct CopyBody {
  U* dst;
  const U* src;
  __device__ void operator()(const int64_t* off) const {
    dst[off[0]] = src[off[1]];
  }
};

/** dst (a view, any strides) = src, of one shape and dtype. */
void copy_into(const Tensor& src, const Tensor& dst, const char* op) {
  dispatch_bits(src.dtype(), op, [&](auto tag) {
    using U = decltype(tag);
    launch_elementwise<2>(dst, {&src},
                          CopyBody<U>{static_cast<U*>(dst.raw_data()),
                                      static_cast<const U*>(src.raw_data())});
  });
}

void zero(const Tensor& out) {
  TAPEFLOW_CUDA_CHECK(cudaMemsetAsync(out.raw_data(), 0,
                                      out.numel() * itemsize(out.dtype()),
                                      activate(out.device().index)));
}

/** out's region starting at `begin` with `shape`, as a strided view. */
Tensor region(const Tensor& out, const Shape& begin, const Shape& shape) {
  int64_t offset = out.offset();
  for (int64_t i = 0; i < out.rank(); ++i)
    offset += begin[i] * out.strides()[i];
  return make_view(out, shape, out.strides(), offset);
}

void slice_grad(const SliceGrad& op, Inputs in, const Outputs& outs) {
  Tensor& out = outs[0];
  if (out.numel() == 0) return;
  zero(out);
  copy_into(in[0], region(out, op.begin, in[0].shape()), op.name);
}

void concat(const Concat& op, Inputs in, const Outputs& outs) {
  Tensor& out = outs[0];
  Shape begin;
  begin.resize(out.rank());
  for (const Tensor& t : in) {
    copy_into(t, region(out, begin, t.shape()), op.name);
    begin[op.axis] += t.shape()[op.axis];
  }
}

void reverse(const Reverse& op, Inputs in, const Outputs& outs) {
  if (outs[0].numel() == 0) return;
  copy_into(op.source(in[0]), outs[0], op.name);
}

/** A tensor seen as (outer, axis, inner) blocks around one axis. */
struct Blocks {
  int64_t outer = 1, axis = 1, inner = 1;
};
Blocks blocks_of(const Shape& s, int64_t axis) {
  Blocks b;
  for (int64_t i = 0; i < axis; ++i) b.outer *= s[i];
  b.axis = s[axis];
  for (int64_t i = axis + 1; i < s.size(); ++i) b.inner *= s[i];
  return b;
}

/** Calls f(I{}) with the index dtype's type (int32 or int64). */
template <class F>
void dispatch_index(DType t, const char* op, F&& f) {
  if (t == int32) return f(int32_t{});
  if (t == int64) return f(int64_t{});
  throw op_error<DTypeError>(op, "expected int32 or int64 indices, got ",
                             dtype_name(t));
}

/** out (outer, n, inner) = params (outer, axis, inner) at idx along axis. */
template <class U, class I>
__global__ void gather_kernel(Blocks b, int64_t n, const U* params,
                              const I* idx, U* out, DeferredIndexCheck check) {
  const int64_t total = b.outer * n * b.inner;
  for (int64_t i = grid_first(); i < total; i += grid_step()) {
    const int64_t e = i % b.inner, k = i / b.inner;
    const int64_t j = k % n, o = k / n;
    const int64_t at = static_cast<int64_t>(idx[j]);
    if (!check.valid(at)) {
      out[i] = U(0);
      continue;
    }
    out[i] = params[(o * b.axis + at) * b.inner + e];
  }
}

/**
 * *p += v atomically for every numeric dtype: int64 through its unsigned
 * twin, whose sum wraps as two's complement does.
 */
template <class T>
__device__ void atomic_add(T* p, T v) {
  if constexpr (std::is_same_v<T, int64_t>)
    atomicAdd(reinterpret_cast<unsigned long long*>(p),
              static_cast<unsigned long long>(v));
  else
    atomicAdd(p, v);
}

/** out (outer, axis, inner) += g (outer, n, inner) at idx along axis. */
template <class T, class I>
__global__ void gather_grad_kernel(Blocks b, int64_t n, const T* g,
                                   const I* idx, T* out,
                                   DeferredIndexCheck check) {
  const int64_t total = b.outer * n * b.inner;
  for (int64_t i = grid_first(); i < total; i += grid_step()) {
    const int64_t e = i % b.inner, k = i / b.inner;
    const int64_t j = k % n, o = k / n;
    const int64_t at = static_cast<int64_t>(idx[j]);
    if (!check.valid(at)) continue;
    atomic_add(out + (o * b.axis + at) * b.inner + e, g[i]);
  }
}

template <class T, class I>
__global__ void one_hot_kernel(int64_t count, int64_t depth, const I* idx, T on,
                               T off, T* out) {
  const int64_t total = count * depth;
  for (int64_t i = grid_first(); i < total; i += grid_step())
    out[i] = static_cast<int64_t>(idx[i / depth]) == i % depth ? on : off;
}

void gather(const Gather& op, Inputs in, const Outputs& outs) {
  Tensor& out = outs[0];
  const Tensor params = materialize(in[0]), indices = materialize(in[1]);
  const Blocks b = blocks_of(params.shape(), op.axis);
  const int64_t n = indices.numel();
  if (out.numel() == 0) return;
  const int device = out.device().index;
  const DeferredIndexCheck check =
      deferred_index_check(device, op.name, 0, b.axis);
  dispatch_bits(params.dtype(), op.name, [&](auto bits) {
    using U = decltype(bits);
    dispatch_index(indices.dtype(), op.name, [&](auto index) {
      using I = decltype(index);
      gather_kernel<U, I>
          <<<blocks_for(out.numel()), kBlockThreads, 0, activate(device)>>>(
              b, n, static_cast<const U*>(params.raw_data()),
              static_cast<const I*>(indices.raw_data()),
              static_cast<U*>(out.raw_data()), check);
      TAPEFLOW_CUDA_CHECK(cudaGetLastError());
    });
  });
}

void gather_grad(const GatherGrad& op, Inputs in, const Outputs& outs) {
  Tensor& out = outs[0];
  const Tensor indices = materialize(in[0]), g = materialize(in[1]);
  const Blocks b = blocks_of(op.params_shape, op.axis);
  const int64_t n = indices.numel();
  if (out.numel() == 0) return;
  zero(out);
  if (g.numel() == 0) return;
  const int device = out.device().index;
  const DeferredIndexCheck check =
      deferred_index_check(device, op.name, 0, b.axis);
  dispatch_numeric(g.dtype(), op.name, [&](auto tag) {
    using T = decltype(tag);
    dispatch_index(indices.dtype(), op.name, [&](auto index) {
      using I = decltype(index);
      gather_grad_kernel<T, I>
          <<<blocks_for(g.numel()), kBlockThreads, 0, activate(device)>>>(
              b, n, static_cast<const T*>(g.raw_data()),
              static_cast<const I*>(indices.raw_data()),
              static_cast<T*>(out.raw_data()), check);
      TAPEFLOW_CUDA_CHECK(cudaGetLastError());
    });
  });
}

void one_hot(const OneHot& op, Inputs in, const Outputs& outs) {
  Tensor& out = outs[0];
  if (out.numel() == 0) return;
  const Tensor indices = materialize(in[0]);
  dispatch_all(out.dtype(), op.name, [&](auto tag) {
    using T = decltype(tag);
    dispatch_index(indices.dtype(), op.name, [&](auto index) {
      using I = decltype(index);
      one_hot_kernel<T, I><<<blocks_for(out.numel()), kBlockThreads, 0,
                             activate(out.device().index)>>>(
          indices.numel(), op.depth, static_cast<const I*>(indices.raw_data()),
          convert_value<T>(op.on_value), convert_value<T>(op.off_value),
          static_cast<T*>(out.raw_data()));
      TAPEFLOW_CUDA_CHECK(cudaGetLastError());
    });
  });
}

}  // namespace

void register_index(Registry& r) {
  constexpr auto gpu = DeviceType::cuda;
  r.set<SliceGrad>(gpu, slice_grad, "cuda");
  r.set<Concat>(gpu, concat, "cuda");
  r.set<Reverse>(gpu, reverse, "cuda");
  r.set<Gather>(gpu, gather, "cuda");
  r.set<GatherGrad>(gpu, gather_grad, "cuda");
  r.set<OneHot>(gpu, one_hot, "cuda");
}

}  // namespace tapeflow::cuda
