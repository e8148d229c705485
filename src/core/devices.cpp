// Device enumeration and synchronization, and the visible-device list the
// CUDA driver reads at its initialization (CUDA.md §3).
#include <cstdlib>
#include <exception>
#include <set>
#include <string>

#include "core/backend_loader.hpp"
#include "core/cpu_allocator.hpp"
#include "core/device_backend.hpp"
#include "core/op_error.hpp"
#include "core/registry.hpp"
#include "tapeflow/config.hpp"
#include "tapeflow/core/error.hpp"
#include "tapeflow/memory.hpp"

namespace tapeflow {

int device_count(DeviceType type) {
  if (type == DeviceType::cpu) return 1;
  try {
    ensure_backends_registered();
    const DeviceBackend* b = device_backend(type);
    return b ? b->device_count() : 0;
  } catch (const std::exception&) {
    return 0;  // a broken driver is no device, as cudaGetDeviceCount says
  }
}

void synchronize(Device device) {
  if (device.is_cpu()) return;
  checked_backend(device, "synchronize")->synchronize(device.index);
}

namespace config {

void set_visible_devices(const std::vector<int>& ordinals) {
  constexpr const char* op = "set_visible_devices";
  std::string list;
  std::set<int> seen;
  for (const int o : ordinals) {
    if (o < 0 || !seen.insert(o).second)
      throw op_error<ValueError>(op,
                                 "expected distinct device ordinals >= 0, got ",
                                 o, o < 0 ? "" : " twice");
    if (!list.empty()) list += ',';
    list += std::to_string(o);
  }
  if (cuda_load_attempted())
    throw op_error<DeviceError>(
        op, "expected a call before CUDA's first use, got one after it (",
        device_count(DeviceType::cuda),
        " CUDA devices visible; CUDA_VISIBLE_DEVICES is read once)");
  setenv("CUDA_VISIBLE_DEVICES", list.c_str(), 1);
}

}  // namespace config
}  // namespace tapeflow
