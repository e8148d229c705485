// cumsum on the CPU: one sequential scan per line of the axis
// (core/scan_line.hpp, shared with the CUDA kernel), lines split over the
// threads.
#include "core/dtype_dispatch.hpp"
#include "core/registry.hpp"
#include "cpu/axis_lines.hpp"
#include "ops/reduce_ops.hpp"

namespace tapeflow::cpu {
namespace {

void cumsum(const Cumsum& op, Inputs in, const Outputs& outs) {
  dispatch_numeric(in[0].dtype(), Cumsum::name, [&](auto tag) {
    using T = decltype(tag);
    const T* src = static_cast<const T*>(in[0].raw_data());
    T* dst = static_cast<T*>(outs[0].raw_data());
    for_each_line(in[0], outs[0], op.axis, [&](const AxisLine& l) {
      cumsum_line(src + l.x_at, l.x_step, dst + l.out_at, l.out_step, l.n,
                  op.exclusive, op.reverse);
    });
  });
}

}  // namespace

void register_scan(Registry& r) {
  r.set<Cumsum>(DeviceType::cpu, cumsum, "cpu");
}

}  // namespace tapeflow::cpu
