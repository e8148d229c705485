#pragma once
// --device cpu|cuda:N, shared by the training samples: the device is parsed
// by the library and checked against the devices this process sees before
// any work starts, so a missing GPU is one clear line (and exit status 2)
// rather than an error from the first op that touches it.
#include <string>
#include <tapeflow/tapeflow.hpp>

namespace samples {

/** --device's help text. */
inline constexpr const char* kDeviceHelp =
    "where the model, its data and every step run: cpu or cuda:N (cuda "
    "means cuda:0)";

/**
 * The device `spec` names; ValueError for a malformed name, DeviceError
 * naming the device count when this process has no such device.
 */
inline tapeflow::Device checked_device(const std::string& spec) {
  const tapeflow::Device device = tapeflow::parse_device(spec);
  if (device.is_cpu()) return device;
  const int count = tapeflow::device_count(device.type);
  if (device.index < count) return device;
  if (count == 0)
    throw tapeflow::DeviceError(
        "[--device] expected a CUDA device, got " + device.str() +
        " on a machine with 0 CUDA devices (no GPU, no driver, or tapeflow "
        "built without CUDA); --device cpu trains on the CPU");
  throw tapeflow::DeviceError(
      "[--device] expected one of cuda:0..cuda:" + std::to_string(count - 1) +
      " (" + std::to_string(count) + " CUDA devices visible), got " +
      device.str());
}

}  // namespace samples
