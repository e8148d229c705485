#include "tapeflow/device_scope.hpp"

#include <algorithm>
#include <utility>
#include <vector>

namespace tapeflow {
namespace {

/** This thread's live scopes, innermost last. */
thread_local std::vector<std::pair<const DeviceScope*, Device>> t_scopes;

}  // namespace

DeviceScope::DeviceScope(Device device) {
  t_scopes.emplace_back(this, device);
}

DeviceScope::~DeviceScope() {
  // Its own entry, wherever it is: a scope on the heap may end before one
  // made after it, which then stays in force (it was left stale for ever).
  const auto it =
      std::find_if(t_scopes.rbegin(), t_scopes.rend(),
                   [this](const auto& s) { return s.first == this; });
  if (it != t_scopes.rend()) t_scopes.erase(std::next(it).base());
}

std::optional<Device> DeviceScope::current() {
  if (t_scopes.empty()) return std::nullopt;
  return t_scopes.back().second;
}

Device default_device() {
  return t_scopes.empty() ? Device::cpu() : t_scopes.back().second;
}

}  // namespace tapeflow
