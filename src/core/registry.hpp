#pragma once
#include <span>

#include "core/device_backend.hpp"
#include "core/payload.hpp"
#include "tapeflow/core/tensor.hpp"

namespace tapeflow {

using Inputs = std::span<const Tensor>;

/**
 * The preallocated outputs of one op call, and the slot for what its kernel
 * may leave for the op's own gradient. The slot exists only while something
 * keeps it (a recording tape, or a caller of apply_keeping): inference keeps
 * nothing, and a kernel asks keeps_payload() before converting anything
 * extra.
 */
class Outputs {
 public:
  Outputs(std::span<Tensor> tensors, PayloadPtr* payload)
      : tensors_(tensors), payload_(payload) {}
  Tensor& operator[](size_t i) const { return tensors_[i]; }
  size_t size() const { return tensors_.size(); }
  bool keeps_payload() const { return payload_ != nullptr; }
  void leave(PayloadPtr p) const {
    if (payload_) *payload_ = std::move(p);
  }

 private:
  std::span<Tensor> tensors_;
  PayloadPtr* payload_;
};

/** A kernel fills the preallocated outputs from `in` for one op on one device.
 */
template <class Op>
using Kernel = void (*)(const Op& op, Inputs in, const Outputs& out);

/** One table per op type: a kernel (and its backend's name) per device. */
template <class Op>
struct KernelTable {
  static inline Kernel<Op> kernels[kNumDeviceTypes] = {};
  static inline const char* backends[kNumDeviceTypes] = {};
};

/** What a backend's register function fills: `r.set<Exp>(cpu, fn, "xsimd")`. */
class Registry {
 public:
  template <class Op>
  void set(DeviceType device, Kernel<Op> kernel, const char* backend) {
    KernelTable<Op>::kernels[static_cast<int>(device)] = kernel;
    KernelTable<Op>::backends[static_cast<int>(device)] = backend;
  }
  /** Memory and host copies for a non-CPU device type. */
  void set_backend(DeviceType device, DeviceBackend* backend) {
    set_device_backend(device, backend);
  }
};

void register_cpu(Registry& r);

/**
 * Registers the CPU's kernels, once (thread-safe), and loads the backend of
 * `type` where it is another device's (the CUDA module registers its kernels
 * as it loads): a process's first op on a GPU finds its kernel.
 */
void ensure_backends_registered(DeviceType type = DeviceType::cpu);

/** Prints "op -> device (backend)" the first time a triple runs. */
void log_placement(const char* op, Device device, const char* backend,
                   bool soft);
bool placement_logging_enabled();

/**
 * The kernel of Op for `device` (null if it has none), registering the
 * backends on the first miss; logs the placement when asked to.
 */
template <class Op>
Kernel<Op> find_kernel(Device device) {
  const int d = static_cast<int>(device.type);
  Kernel<Op> kernel = KernelTable<Op>::kernels[d];
  if (!kernel) [[unlikely]] {
    ensure_backends_registered(device.type);
    kernel = KernelTable<Op>::kernels[d];
  }
  if (kernel && placement_logging_enabled()) [[unlikely]]
    log_placement(Op::name, device, KernelTable<Op>::backends[d], false);
  return kernel;
}

}  // namespace tapeflow
