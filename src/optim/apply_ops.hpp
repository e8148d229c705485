#pragma once
// Fused optimizer updates (TensorFlow's ResourceApply* kernels): one pass
// over memory that updates a parameter and its slots in place, instead of
// the dozen temporaries the composite rule makes. Inputs all share one
// shape, dtype and device, and are contiguous.
#include "core/creation_internal.hpp"
#include "core/small_vector.hpp"
#include "ops/apply.hpp"
#include "profiler/hook.hpp"

namespace tapeflow {

/** w -= lr * g. Inputs {w, g}. */
struct ApplyGradientDescent {
  static constexpr const char* name = "apply_gradient_descent";
  static constexpr uint32_t writes = 0b1;  // bit i: the kernel writes input i
  double lr;
};

/**
 * m += (g - m)(1 - b1); v += (g^2 - v)(1 - b2); w -= alpha m / (sqrt(v) + eps).
 * Inputs {w, g, m, v}; alpha is the bias-corrected learning rate.
 */
struct ApplyAdam {
  static constexpr const char* name = "apply_adam";
  static constexpr uint32_t writes = 0b1101;  // w, m, v
  double alpha, beta_1, beta_2, epsilon;
};

/**
 * Runs an update kernel that writes into its inputs, if the inputs'
 * device has one and they are dense; false otherwise (use the composite).
 */
template <class Op>
bool apply_in_place(const Op& op, Inputs in) {
  const Device device = common_device(Op::name, in);
  for (const Tensor& t : in)
    if (!t.is_contiguous() || !(t.shape() == in[0].shape()) ||
        t.dtype() != in[0].dtype() || !is_floating(t.dtype()))
      return false;
  const Kernel<Op> kernel = find_kernel<Op>(device);
  if (!kernel) return false;
  SmallVector<Tensor, 4> buffers;  // what the kernel writes and reads
  for (size_t i = 0; i < in.size(); ++i)
    buffers.push_back((Op::writes >> i) & 1u
                          ? begin_in_place_write(in[i], true, Op::name)
                          : held(in[i]));
  const Inputs held_in(buffers.data(), buffers.size());
  Tensor target = buffers[0];
  if (profiler::detail::g_running.load(std::memory_order_relaxed))
      [[unlikely]] {
    profiler::detail::OpTimer timer;
    kernel(op, held_in, Outputs({&target, 1}, nullptr));
    timer.finish(Op::name, device,
                 KernelTable<Op>::backends[static_cast<int>(device.type)],
                 false, in);
    return true;
  }
  kernel(op, held_in, Outputs({&target, 1}, nullptr));
  return true;
}

}  // namespace tapeflow
