#pragma once
#include "tapeflow/core/device.hpp"
#include "tapeflow/core/storage.hpp"

namespace tapeflow {

/** Byte counters of the allocator behind `device`. */
MemoryStats memory_stats(Device device = Device::cpu());
/** Returns the cached (free) blocks of `device` to the system. */
void empty_cache(Device device = Device::cpu());

}  // namespace tapeflow
