#pragma once
// DeviceScope: `with tf.device(...)` for C++ (model parallelism in one
// process: layer d's weights and tensors on device d).
#include <optional>

#include "tapeflow/core/device.hpp"

namespace tapeflow {

/**
 * While alive, on this thread: creation functions called without a device
 * (zeros, ones, random_uniform, tensor, ...), tpf::Variable(...) and layers
 * built by their first call place what they make on `device`. Scopes nest;
 * an explicit device argument still wins, and ops on existing tensors run
 * where their inputs are (move between devices with Tensor::to, which the
 * tape records). Worker threads (tpf::data) start outside every scope.
 */
class DeviceScope {
 public:
  explicit DeviceScope(Device device);
  ~DeviceScope();
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;

  /**
   * The innermost live scope's device on this thread, if any. A scope that
   * ends out of order (one held by a unique_ptr) leaves the others in force;
   * a scope ends on the thread that made it.
   */
  static std::optional<Device> current();

 private:
  Device device_;
  DeviceScope* inner_;       // made after this one on its thread, if live
  DeviceScope* outer_;       // made before this one on its thread, if live
  DeviceScope** innermost_;  // its thread's innermost scope
};

}  // namespace tapeflow
