// cumsum on the CPU: one sequential scan per line of the axis
// (core/scan_line.hpp, shared with the CUDA kernel), lines split over the
// threads.
#include <algorithm>

#include "core/dtype_dispatch.hpp"
#include "core/registry.hpp"
#include "core/scan_line.hpp"
#include "cpu/parallel.hpp"
#include "ops/reduce_ops.hpp"

namespace tapeflow::cpu {
namespace {

void cumsum(const Cumsum& op, Inputs in, const Outputs& outs) {
  const Tensor& x = in[0];
  Tensor& out = outs[0];
  if (out.numel() == 0) return;
  const int64_t n = x.shape()[op.axis];
  const int64_t x_step = x.strides()[op.axis];
  const int64_t out_step = out.strides()[op.axis];
  const ScanLines lines =
      scan_lines(x.shape(), x.strides(), out.strides(), op.axis);
  dispatch_numeric(x.dtype(), Cumsum::name, [&](auto tag) {
    using T = decltype(tag);
    const T* src = static_cast<const T*>(x.raw_data());
    T* dst = static_cast<T*>(out.raw_data());
    parallel_for(out.numel() / n, std::max<int64_t>(1, kParallelGrain / n),
                 [&](int64_t begin, int64_t end) {
                   for (int64_t k = begin; k < end; ++k) {
                     int64_t x_at, out_at;
                     lines.starts(k, x_at, out_at);
                     cumsum_line(src + x_at, x_step, dst + out_at, out_step, n,
                                 op.exclusive, op.reverse);
                   }
                 });
  });
}

}  // namespace

void register_scan(Registry& r) {
  r.set<Cumsum>(DeviceType::cpu, cumsum, "cpu");
}

}  // namespace tapeflow::cpu
