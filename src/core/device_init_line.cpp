#include "core/device_init_line.hpp"

#include <charconv>
#include <cstdio>

namespace tapeflow {
namespace {

/** "79.1 GiB": one decimal, as nvidia-smi-sized numbers read best. */
std::string gib(size_t bytes) {
  char out[32];
  std::snprintf(out, sizeof out, "%.1f GiB",
                static_cast<double>(bytes) / double(size_t{1} << 30));
  return out;
}

/** The shortest text that reads back as `f`, and "1.0" rather than "1". */
std::string fraction(double f) {
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, f);
  std::string s(buf, r.ptr);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

}  // namespace

std::string device_init_line(const GpuDescription& gpu, size_t limit_bytes,
                             bool allow_growth,
                             const config::GpuMemoryOptions& options) {
  std::string line = gpu.device + ": " + gpu.name + " (sm_" +
                     std::to_string(gpu.major) + std::to_string(gpu.minor) +
                     ", " + gib(gpu.total_bytes) + "), limit " +
                     gib(limit_bytes) + " (";
  line += options.memory_limit_bytes > 0
              ? std::string("memory_limit_bytes")
              : "fraction " + fraction(options.per_process_gpu_memory_fraction);
  line += allow_growth ? "), allow_growth on, " : "), allow_growth off, ";
  return line + options.allocator_type;
}

}  // namespace tapeflow
