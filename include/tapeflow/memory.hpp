#pragma once
#include "tapeflow/core/device.hpp"
#include "tapeflow/core/storage.hpp"

namespace tapeflow {

/** Byte counters of the allocator behind `device`. */
MemoryStats memory_stats(Device device = Device::cpu());
/** Returns the cached (free) blocks of `device` to the system. */
void empty_cache(Device device = Device::cpu());

/**
 * Devices of `type` this process sees (the CPU is one): 0 without a GPU, a
 * driver or the CUDA backend. Never throws. The first call for CUDA loads
 * the backend, after which set_visible_devices refuses changes.
 */
int device_count(DeviceType type);
/** Waits for the work queued on `device`; nothing to wait for on the CPU. */
void synchronize(Device device);

}  // namespace tapeflow
