// argsort on the GPU: every line's entries (key, position) copied out, then
// merge passes of width 1, 2, 4, ... over all lines at once, each entry
// moving to its place in the merged run (core/sort_order.hpp's
// merged_position: its rank in its run plus a binary search of the partner
// run), then the positions written out. ceil(log2 n) passes of one thread
// per entry: deterministic, no atomics, and (key, position) being a total
// order, the CPU's stable sort's permutation exactly.
#include <utility>

#include "check.hpp"
#include "context.hpp"
#include "core/creation_internal.hpp"
#include "core/dtype_dispatch.hpp"
#include "core/scan_line.hpp"
#include "core/sort_order.hpp"
#include "grid.cuh"
#include "ops/reduce_ops.hpp"

namespace tapeflow::cuda {
namespace {

/** A line's layout: n entries, `step` apart in the strided tensor. */
struct Lines {
  ScanLines starts;
  int64_t n, numel, step;
};

template <class T>
__global__ void load_kernel(Lines lines, const T* x, T* keys,
                            int64_t* positions) {
  for (int64_t i = grid_first(); i < lines.numel; i += grid_step()) {
    const int64_t line = i / lines.n, p = i % lines.n;
    int64_t x_at, unused;
    lines.starts.starts(line, x_at, unused);
    keys[i] = x[x_at + p * lines.step];
    positions[i] = p;
  }
}

template <class T>
__global__ void merge_kernel(int64_t numel, int64_t n, int64_t width,
                             bool descending, const T* keys,
                             const int64_t* positions, T* keys_out,
                             int64_t* positions_out) {
  for (int64_t i = grid_first(); i < numel; i += grid_step()) {
    const int64_t base = i / n * n;
    const int64_t to = base + merged_position(keys + base, positions + base, n,
                                              i - base, width, descending);
    keys_out[to] = keys[i];
    positions_out[to] = positions[i];
  }
}

__global__ void store_kernel(Lines lines, const int64_t* positions,
                             int64_t* out) {
  for (int64_t i = grid_first(); i < lines.numel; i += grid_step()) {
    const int64_t line = i / lines.n, p = i % lines.n;
    int64_t unused, out_at;
    lines.starts.starts(line, unused, out_at);
    out[out_at + p * lines.step] = positions[i];
  }
}

void argsort(const ArgSort& op, Inputs in, const Outputs& outs) {
  const Tensor& x = in[0];
  Tensor& out = outs[0];
  if (out.numel() == 0) return;
  const int64_t n = x.shape()[op.axis], numel = out.numel();
  const ScanLines starts =
      scan_lines(x.shape(), x.strides(), out.strides(), op.axis);
  const cudaStream_t stream = activate(x.device().index);
  const unsigned blocks = blocks_for(numel);
  dispatch_all(x.dtype(), ArgSort::name, [&](auto tag) {
    using T = decltype(tag);
    Tensor keys[2], positions[2];
    for (int b = 0; b < 2; ++b) {
      keys[b] = empty_tensor(Shape({numel}), x.dtype(), x.device(), op.name);
      positions[b] = empty_tensor(Shape({numel}), int64, x.device(), op.name);
    }
    const auto key_data = [&](int b) {
      return static_cast<T*>(keys[b].raw_data());
    };
    const auto position_data = [&](int b) {
      return static_cast<int64_t*>(positions[b].raw_data());
    };
    load_kernel<T><<<blocks, kBlockThreads, 0, stream>>>(
        Lines{starts, n, numel, x.strides()[op.axis]},
        static_cast<const T*>(x.raw_data()), key_data(0), position_data(0));
    TAPEFLOW_CUDA_CHECK(cudaGetLastError());
    int from = 0;
    for (int64_t width = 1; width < n; width *= 2, from ^= 1) {
      merge_kernel<T><<<blocks, kBlockThreads, 0, stream>>>(
          numel, n, width, op.descending, key_data(from), position_data(from),
          key_data(from ^ 1), position_data(from ^ 1));
      TAPEFLOW_CUDA_CHECK(cudaGetLastError());
    }
    store_kernel<<<blocks, kBlockThreads, 0, stream>>>(
        Lines{starts, n, numel, out.strides()[op.axis]}, position_data(from),
        static_cast<int64_t*>(out.raw_data()));
    TAPEFLOW_CUDA_CHECK(cudaGetLastError());
  });
}

}  // namespace

void register_sort(Registry& r) {
  r.set<ArgSort>(DeviceType::cuda, argsort, "cuda");
}

}  // namespace tapeflow::cuda
