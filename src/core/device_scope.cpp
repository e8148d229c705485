#include "tapeflow/device_scope.hpp"

namespace tapeflow {
namespace {

/**
 * This thread's innermost live scope; the others hang below it. A plain
 * pointer, never destroyed: a static DeviceScope may end after the thread's
 * thread_local objects.
 */
thread_local DeviceScope* t_innermost = nullptr;

}  // namespace

DeviceScope::DeviceScope(Device device)
    : device_(device),
      inner_(nullptr),
      outer_(t_innermost),
      innermost_(&t_innermost) {
  if (outer_) outer_->inner_ = this;
  t_innermost = this;
}

DeviceScope::~DeviceScope() {
  // Unlinked wherever it is: a scope held by a unique_ptr may end before
  // one made after it, which stays in force.
  if (inner_)
    inner_->outer_ = outer_;
  else
    *innermost_ = outer_;
  if (outer_) outer_->inner_ = inner_;
}

std::optional<Device> DeviceScope::current() {
  if (!t_innermost) return std::nullopt;
  return t_innermost->device_;
}

Device default_device() {
  return DeviceScope::current().value_or(Device::cpu());
}

}  // namespace tapeflow
