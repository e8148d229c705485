// Fractional pooling on the GPU, over NHWC tensors: one thread per output
// element for the forward passes, with the CPU's first-maximum rule and
// workspace (the index within the region); one thread per input element for
// the gradients, which gather dy from the regions holding the element
// (core/fractional_regions.hpp) in the order the CPU adds them, so the sums
// are the CPU's and need no atomics.
#include <vector>

#include "check.hpp"
#include "context.hpp"
#include "core/creation_internal.hpp"
#include "core/device_backend.hpp"
#include "core/dtype_dispatch.hpp"
#include "core/fractional_regions.hpp"
#include "grid.cuh"
#include "ops/nn/fractional_pool_ops.hpp"

namespace tapeflow::cuda {
namespace {

/** An NHWC input (n, h, w, c) and its regions along rows and columns. */
struct Geo {
  int64_t n, h, w, c;
  FractionalAxis rows, cols;

  __device__ int64_t out_size() const {
    return n * rows.regions * cols.regions * c;
  }
  __device__ int64_t in_at(int64_t img, int64_t row, int64_t col) const {
    return ((img * h + row) * w + col) * c;
  }
  __device__ int64_t out_at(int64_t img, int64_t r, int64_t oc) const {
    return ((img * rows.regions + r) * cols.regions + oc) * c;
  }
  /** Input offset (channel 0) of element k, row-major, of region (r, oc). */
  __device__ int64_t element(int64_t img, int64_t r, int64_t oc,
                             int64_t k) const {
    const int64_t width = cols.size(oc);
    return in_at(img, rows.first(r) + k / width, cols.first(oc) + k % width);
  }
};

/** Output element i's (image, region row, region column, channel). */
struct OutputAt {
  int64_t img, r, oc, ch;
  __device__ OutputAt(const Geo& g, int64_t i) {
    ch = i % g.c;
    oc = i / g.c % g.cols.regions;
    r = i / (g.c * g.cols.regions) % g.rows.regions;
    img = i / (g.c * g.cols.regions * g.rows.regions);
  }
};

template <class T>
__global__ void max_kernel(Geo g, const T* x, T* y, int32_t* ws) {
  for (int64_t i = grid_first(); i < g.out_size(); i += grid_step()) {
    const OutputAt o(g, i);
    T best = x[g.in_at(o.img, g.rows.first(o.r), g.cols.first(o.oc)) + o.ch];
    int32_t at = 0, k = 0;
    for (int64_t row = g.rows.first(o.r); row <= g.rows.last(o.r); ++row)
      for (int64_t col = g.cols.first(o.oc); col <= g.cols.last(o.oc);
           ++col, ++k) {
        const T v = x[g.in_at(o.img, row, col) + o.ch];
        // v greater, or v NaN; never past a NaN already taken.
        if (!(v <= best) && best == best) best = v, at = k;
      }
    y[i] = best;
    if (ws) ws[i] = at;
  }
}

template <class T>
__global__ void avg_kernel(Geo g, const T* x, T* y) {
  for (int64_t i = grid_first(); i < g.out_size(); i += grid_step()) {
    const OutputAt o(g, i);
    T acc = 0;
    for (int64_t row = g.rows.first(o.r); row <= g.rows.last(o.r); ++row)
      for (int64_t col = g.cols.first(o.oc); col <= g.cols.last(o.oc); ++col)
        acc += x[g.in_at(o.img, row, col) + o.ch];
    y[i] = acc / T(g.rows.size(o.r) * g.cols.size(o.oc));
  }
}

template <class T>
__global__ void gather_kernel(Geo g, const T* gx, const int32_t* ws, T* y) {
  for (int64_t i = grid_first(); i < g.out_size(); i += grid_step()) {
    const OutputAt o(g, i);
    y[i] = gx[g.element(o.img, o.r, o.oc, ws[i]) + o.ch];
  }
}

/**
 * dx of every input element: the sum over the regions holding it of
 * contribution(output index, region row, region column), in the CPU's
 * order.
 */
template <class T, class Contribution>
__global__ void grad_kernel(Geo g, T* dx, Contribution contribution) {
  const int64_t total = g.n * g.h * g.w * g.c;
  for (int64_t i = grid_first(); i < total; i += grid_step()) {
    const int64_t ch = i % g.c, col = i / g.c % g.w,
                  row = i / (g.c * g.w) % g.h, img = i / (g.c * g.w * g.h);
    int64_t rr[2], cc[2];
    const int nr = g.rows.cover(row, rr), nc = g.cols.cover(col, cc);
    fractional_adding_order(rr, nr);
    T acc = 0;
    for (int a = 0; a < nr; ++a)
      for (int b = 0; b < nc; ++b)
        acc += contribution(g.out_at(img, rr[a], cc[b]) + ch, img, rr[a], cc[b],
                            i - ch);
    dx[i] = acc;
  }
}

/** Max pooling's: dy where the region's maximum is this element. */
template <class T>
struct MaxContribution {
  Geo g;
  const T* dy;
  const int32_t* ws;
  __device__ T operator()(int64_t o, int64_t img, int64_t r, int64_t oc,
                          int64_t element) const {
    return g.element(img, r, oc, ws[o]) == element ? dy[o] : T(0);
  }
};

/** Average pooling's: dy spread over the region. */
template <class T>
struct AvgContribution {
  Geo g;
  const T* dy;
  __device__ T operator()(int64_t o, int64_t, int64_t r, int64_t oc,
                          int64_t) const {
    return dy[o] / T(g.rows.size(r) * g.cols.size(oc));
  }
};

/** The regions' boundaries on the device, and the geometry reading them. */
struct DeviceRegions {
  Tensor boundaries;  // the rows' then the columns'
  Geo geo;
};

DeviceRegions device_regions(const FractionalRegions& r, const Shape& in,
                             Device device, const char* op) {
  // One buffer and a backend copy: a kernel's internals go through no op
  // (Tensor::to would log a placement and a profiler event of its own).
  std::vector<int64_t> host = r.rows;
  host.insert(host.end(), r.cols.begin(), r.cols.end());
  DeviceRegions d;
  d.boundaries = empty_tensor({static_cast<int64_t>(host.size())}, DType::int64,
                              device, op);
  auto* seq = static_cast<int64_t*>(d.boundaries.raw_data());
  device_backend(device.type)
      ->copy_from_host(host.data(), seq, host.size() * sizeof(int64_t),
                       device.index);
  const auto row_bounds = static_cast<int64_t>(r.rows.size());
  const FractionalAxis rows{seq, row_bounds - 1, in[1], r.overlapping};
  const FractionalAxis cols{seq + row_bounds,
                            static_cast<int64_t>(r.cols.size()) - 1, in[2],
                            r.overlapping};
  d.geo = Geo{in[0], in[1], in[2], in[3], rows, cols};
  return d;
}

template <class T>
const T* in_ptr(const Tensor& t) {
  return static_cast<const T*>(t.raw_data());
}
template <class T>
T* out_ptr(const Tensor& t) {
  return static_cast<T*>(t.raw_data());
}

void max_pool(const FractionalMaxPool& op, Inputs in, const Outputs& outs) {
  const Tensor x = materialize(in[0]);
  const int64_t n = outs[0].numel();
  if (n == 0) return;
  const DeviceRegions d =
      device_regions(op.regions, x.shape(), x.device(), op.name);
  int32_t* ws = op.with_workspace ? out_ptr<int32_t>(outs[1]) : nullptr;
  dispatch_floating(x.dtype(), op.name, [&](auto tag) {
    using T = decltype(tag);
    max_kernel<T>
        <<<blocks_for(n), kBlockThreads, 0, activate(x.device().index)>>>(
            d.geo, in_ptr<T>(x), out_ptr<T>(outs[0]), ws);
    TAPEFLOW_CUDA_CHECK(cudaGetLastError());
  });
}

void avg_pool(const FractionalAvgPool& op, Inputs in, const Outputs& outs) {
  const Tensor x = materialize(in[0]);
  const int64_t n = outs[0].numel();
  if (n == 0) return;
  const DeviceRegions d =
      device_regions(op.regions, x.shape(), x.device(), op.name);
  dispatch_floating(x.dtype(), op.name, [&](auto tag) {
    using T = decltype(tag);
    avg_kernel<T>
        <<<blocks_for(n), kBlockThreads, 0, activate(x.device().index)>>>(
            d.geo, in_ptr<T>(x), out_ptr<T>(outs[0]));
    TAPEFLOW_CUDA_CHECK(cudaGetLastError());
  });
}

void max_pool_gather(const FractionalMaxPoolGather& op, Inputs in,
                     const Outputs& outs) {
  const Tensor gx = materialize(in[0]), ws = materialize(in[1]);
  const int64_t n = outs[0].numel();
  if (n == 0) return;
  const DeviceRegions d =
      device_regions(op.regions, gx.shape(), gx.device(), op.name);
  dispatch_floating(gx.dtype(), op.name, [&](auto tag) {
    using T = decltype(tag);
    gather_kernel<T>
        <<<blocks_for(n), kBlockThreads, 0, activate(gx.device().index)>>>(
            d.geo, in_ptr<T>(gx), in_ptr<int32_t>(ws), out_ptr<T>(outs[0]));
    TAPEFLOW_CUDA_CHECK(cudaGetLastError());
  });
}

void max_pool_grad(const FractionalMaxPoolGrad& op, Inputs in,
                   const Outputs& outs) {
  const Tensor dy = materialize(in[0]), ws = materialize(in[1]);
  const int64_t n = outs[0].numel();
  if (n == 0) return;
  const DeviceRegions d =
      device_regions(op.regions, op.input_shape, dy.device(), op.name);
  dispatch_floating(dy.dtype(), op.name, [&](auto tag) {
    using T = decltype(tag);
    grad_kernel<T>
        <<<blocks_for(n), kBlockThreads, 0, activate(dy.device().index)>>>(
            d.geo, out_ptr<T>(outs[0]),
            MaxContribution<T>{d.geo, in_ptr<T>(dy), in_ptr<int32_t>(ws)});
    TAPEFLOW_CUDA_CHECK(cudaGetLastError());
  });
}

void avg_pool_grad(const FractionalAvgPoolGrad& op, Inputs in,
                   const Outputs& outs) {
  const Tensor dy = materialize(in[0]);
  const int64_t n = outs[0].numel();
  if (n == 0) return;
  const DeviceRegions d =
      device_regions(op.regions, op.input_shape, dy.device(), op.name);
  dispatch_floating(dy.dtype(), op.name, [&](auto tag) {
    using T = decltype(tag);
    grad_kernel<T>
        <<<blocks_for(n), kBlockThreads, 0, activate(dy.device().index)>>>(
            d.geo, out_ptr<T>(outs[0]),
            AvgContribution<T>{d.geo, in_ptr<T>(dy)});
    TAPEFLOW_CUDA_CHECK(cudaGetLastError());
  });
}

}  // namespace

void register_fractional_pool(Registry& r) {
  constexpr auto gpu = DeviceType::cuda;
  r.set<FractionalMaxPool>(gpu, max_pool, "cuda");
  r.set<FractionalMaxPoolGrad>(gpu, max_pool_grad, "cuda");
  r.set<FractionalMaxPoolGather>(gpu, max_pool_gather, "cuda");
  r.set<FractionalAvgPool>(gpu, avg_pool, "cuda");
  r.set<FractionalAvgPoolGrad>(gpu, avg_pool_grad, "cuda");
}

}  // namespace tapeflow::cuda
