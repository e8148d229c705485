#pragma once
#include <string_view>

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

/**
 * The device a string names, as Device::str() writes it or as PyTorch
 * spells it: "cpu", "cpu:0", "cuda" (cuda:0) or "cuda:N". ValueError for any
 * other text; DeviceError for an index above 32767. Whether the device
 * exists is not checked (device_count tells).
 */
Device parse_device(std::string_view spec);

}  // namespace tapeflow
