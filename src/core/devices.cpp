// Device enumeration and synchronization, and the visible-device list the
// CUDA driver reads at its initialization (CUDA.md §3).
#include <charconv>
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

Device parse_device(std::string_view spec) {
  constexpr const char* op = "parse_device";
  const auto bad = [&]() -> Device {
    throw op_error<ValueError>(
        op, "expected \"cpu\", \"cpu:0\", \"cuda\" or \"cuda:N\", got \"", spec,
        "\"");
  };
  const size_t colon = spec.find(':');
  const std::string_view type = spec.substr(0, colon);
  if (type != "cpu" && type != "cuda") return bad();
  int index = 0;
  if (colon != std::string_view::npos) {
    // Digits only: from_chars alone would take "cuda:-1" or "cuda:1x".
    const std::string_view digits = spec.substr(colon + 1);
    if (digits.empty() ||
        digits.find_first_not_of("0123456789") != std::string_view::npos)
      return bad();
    const auto [end, error] =
        std::from_chars(digits.data(), digits.data() + digits.size(), index);
    if (error == std::errc::result_out_of_range || index > INT16_MAX)
      throw op_error<DeviceError>(op, "expected a device index in [0, ",
                                  INT16_MAX, "], got ", digits);
  }
  if (type == "cpu") return index == 0 ? Device::cpu() : bad();
  return Device::cuda(index);
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
