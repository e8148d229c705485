// cumsum on the GPU: one thread per line of the axis, each scanning its line
// in order with core/scan_line.hpp, the CPU kernel's code, so both give the
// same bits. Many short lines (a sequence axis under a batch) fill the GPU;
// one long line runs on one thread.
#include "check.hpp"
#include "context.hpp"
#include "core/dtype_dispatch.hpp"
#include "core/scan_line.hpp"
#include "grid.cuh"
#include "ops/reduce_ops.hpp"

namespace tapeflow::cuda {
namespace {

template <class T>
__global__ void cumsum_kernel(ScanLines lines, int64_t count, int64_t n,
                              int64_t x_step, int64_t out_step, bool exclusive,
                              bool reverse, const T* x, T* out) {
  for (int64_t k = grid_first(); k < count; k += grid_step()) {
    int64_t x_at, out_at;
    lines.starts(k, x_at, out_at);
    cumsum_line(x + x_at, x_step, out + out_at, out_step, n, exclusive,
                reverse);
  }
}

void cumsum(const Cumsum& op, Inputs in, const Outputs& outs) {
  const Tensor& x = in[0];
  Tensor& out = outs[0];
  if (out.numel() == 0) return;
  const int64_t n = x.shape()[op.axis];
  const int64_t count = out.numel() / n;
  const ScanLines lines =
      scan_lines(x.shape(), x.strides(), out.strides(), op.axis);
  dispatch_numeric(x.dtype(), Cumsum::name, [&](auto tag) {
    using T = decltype(tag);
    cumsum_kernel<T>
        <<<blocks_for(count), kBlockThreads, 0, activate(x.device().index)>>>(
            lines, count, n, x.strides()[op.axis], out.strides()[op.axis],
            op.exclusive, op.reverse, static_cast<const T*>(x.raw_data()),
            static_cast<T*>(out.raw_data()));
    TAPEFLOW_CUDA_CHECK(cudaGetLastError());
  });
}

}  // namespace

void register_scan(Registry& r) {
  r.set<Cumsum>(DeviceType::cuda, cumsum, "cuda");
}

}  // namespace tapeflow::cuda
