#pragma once
// The placement log's line for a GPU when its memory arena starts (CUDA.md
// §3): what the device is and how much of it tapeflow may use. Formatted
// here, without CUDA, so that the text is tested on the CPU.
#include <cstddef>
#include <string>

#include "tapeflow/config.hpp"

namespace tapeflow {

/** What the driver says about a GPU (cudaGetDeviceProperties). */
struct GpuDescription {
  std::string device;  // "cuda:0"
  std::string name;    // "NVIDIA H100 80GB HBM3"
  int major = 0, minor = 0;
  size_t total_bytes = 0;
};

/**
 * "cuda:0: NVIDIA H100 80GB HBM3 (sm_90, 79.1 GiB), limit 79.1 GiB
 * (fraction 1.0), allow_growth on, BFC"; the limit and allow_growth as the
 * arena resolved them (TF_FORCE_GPU_ALLOW_GROWTH included), and
 * "(memory_limit_bytes)" for a limit set in bytes.
 */
std::string device_init_line(const GpuDescription& gpu, size_t limit_bytes,
                             bool allow_growth,
                             const config::GpuMemoryOptions& options);

}  // namespace tapeflow
