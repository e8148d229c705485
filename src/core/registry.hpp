#pragma once
#include <span>

#include "core/device_backend.hpp"
#include "tapeflow/core/tensor.hpp"

namespace tapeflow {

using Inputs = std::span<const Tensor>;

/** A kernel fills the preallocated `out` from `in` for one op on one device. */
template <class Op>
using Kernel = void (*)(const Op& op, Inputs in, Tensor& out);

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

/** Registers every backend this build has, once (thread-safe). */
void ensure_backends_registered();

/** Prints "op -> device (backend)" the first time a triple runs. */
void log_placement(const char* op, Device device, const char* backend,
                   bool soft);
bool placement_logging_enabled();

}  // namespace tapeflow
