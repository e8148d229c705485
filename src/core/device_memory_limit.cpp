#include "core/device_memory_limit.hpp"

#include <cstdio>
#include <sstream>

namespace tapeflow {

size_t device_memory_limit(const config::GpuMemoryOptions& options,
                           size_t total_bytes) {
  return options.memory_limit_bytes > 0
             ? options.memory_limit_bytes
             : static_cast<size_t>(options.per_process_gpu_memory_fraction *
                                   static_cast<double>(total_bytes));
}

std::string device_memory_limit_origin(const config::GpuMemoryOptions& options,
                                       size_t total_bytes) {
  if (options.memory_limit_bytes > 0) return "memory_limit_bytes";
  std::ostringstream os;
  os << "fraction " << options.per_process_gpu_memory_fraction << " of "
     << human_bytes(total_bytes);
  return os.str();
}

std::string human_bytes(size_t bytes) {
  static constexpr const char* units[] = {"KiB", "MiB", "GiB", "TiB"};
  if (bytes < 1024) return std::to_string(bytes) + " B";
  double v = static_cast<double>(bytes) / 1024;
  int u = 0;
  while (v >= 1024 && u < 3) v /= 1024, ++u;
  char out[32];
  std::snprintf(out, sizeof out, "%.2f %s", v, units[u]);
  return out;
}

}  // namespace tapeflow
