#pragma once
#include <functional>
#include <initializer_list>

#include "autograd/node.hpp"
#include "core/registry.hpp"
#include "creation_internal.hpp"

namespace tapeflow {

/** The device all inputs share, or DeviceError naming `op`. */
Device common_device(const char* op, Inputs in);

/** Runs `op` on the CPU for inputs living on a device without a kernel. */
Tensor run_soft_placed(const char* op, Inputs in, Device device,
                       const std::function<void(Inputs, Tensor&)>& cpu_run,
                       const autograd::TensorSpec& spec);
[[noreturn]] void throw_no_kernel(const char* op, Device device);

/**
 * The path of every computing op: device check, shape/dtype inference (errors
 * before any kernel runs), allocation, the device's kernel, tape recording.
 */
template <class Op>
Tensor apply_on(Device device, const Op& op, Inputs in) {
  const autograd::TensorSpec spec = op.infer(in);
  Kernel<Op> kernel = KernelTable<Op>::kernels[static_cast<int>(device.type)];
  if (!kernel) [[unlikely]] {
    ensure_backends_registered();
    kernel = KernelTable<Op>::kernels[static_cast<int>(device.type)];
  }
  Tensor out;
  if (kernel) [[likely]] {
    if (placement_logging_enabled()) [[unlikely]]
      log_placement(Op::name, device,
                    KernelTable<Op>::backends[static_cast<int>(device.type)],
                    false);
    out = empty_tensor(spec.shape, spec.dtype, device);
    kernel(op, in, out);
  } else {
    Kernel<Op> cpu = KernelTable<Op>::kernels[0];
    if (!cpu) throw_no_kernel(Op::name, device);
    out = run_soft_placed(
        Op::name, in, device,
        [&](Inputs host_in, Tensor& host_out) {
          log_placement(Op::name, Device::cpu(), KernelTable<Op>::backends[0],
                        true);
          cpu(op, host_in, host_out);
        },
        spec);
  }
  autograd::record(op, in, out);
  return out;
}

template <class Op>
Tensor apply(const Op& op, Inputs in) {
  return apply_on(common_device(Op::name, in), op, in);
}

template <class Op>
Tensor apply(const Op& op, std::initializer_list<Tensor> in) {
  return apply(op, Inputs(in.begin(), in.size()));
}

/** Ops that only reinterpret storage: `op.view(x)` builds the result. */
template <class Op>
Tensor apply_view(const Op& op, const Tensor& x) {
  Tensor out = op.view(x);
  autograd::record(op, Inputs(&x, 1), out);
  return out;
}

}  // namespace tapeflow
