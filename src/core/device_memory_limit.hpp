#pragma once
// A device's memory cap as GpuMemoryOptions set it, and the words an
// out-of-memory message uses for it and for sizes: shared by the BFC arena
// and the cuda_malloc allocator.
#include <cstddef>
#include <string>

#include "tapeflow/config.hpp"

namespace tapeflow {

/** memory_limit_bytes when > 0, else the fraction of `total_bytes`. */
size_t device_memory_limit(const config::GpuMemoryOptions& options,
                           size_t total_bytes);

/** "memory_limit_bytes", or "fraction 0.5 of 80.00 GiB". */
std::string device_memory_limit_origin(const config::GpuMemoryOptions& options,
                                       size_t total_bytes);

/** "1.50 GiB", "512.00 MiB", "768 B". */
std::string human_bytes(size_t bytes);

}  // namespace tapeflow
