#pragma once
#include "core/device_backend.hpp"
#include "tapeflow/core/storage.hpp"

namespace tapeflow {

/** The process-wide host allocator (64-byte aligned, caching). */
Allocator* cpu_allocator();
/** The allocator of `device`, or DeviceError naming `op`. */
Allocator* allocator_for(Device device, const char* op);
/** The backend of a non-CPU `device` (index checked), or DeviceError. */
DeviceBackend* checked_backend(Device device, const char* op);

}  // namespace tapeflow
