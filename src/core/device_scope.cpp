#include "tapeflow/device_scope.hpp"

namespace tapeflow {
namespace {
thread_local std::optional<Device> t_scope_device;
}  // namespace

DeviceScope::DeviceScope(Device device) : previous_(t_scope_device) {
  t_scope_device = device;
}

DeviceScope::~DeviceScope() {
  t_scope_device = previous_;
}

std::optional<Device> DeviceScope::current() {
  return t_scope_device;
}

Device default_device() {
  return t_scope_device.value_or(Device::cpu());
}

}  // namespace tapeflow
