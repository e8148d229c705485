// config::set_gpu_memory_options: validated once, fixed when the first
// device arena is made (TensorFlow ignored late calls silently: TF#2471).
#include <cmath>
#include <mutex>

#include "core/device_arena.hpp"
#include "core/op_error.hpp"
#include "tapeflow/config.hpp"
#include "tapeflow/core/error.hpp"

namespace tapeflow::config {
namespace {

std::mutex g_mu;
GpuMemoryOptions g_options;
bool g_frozen = false;

}  // namespace

void set_gpu_memory_options(const GpuMemoryOptions& options) {
  constexpr const char* op = "set_gpu_memory_options";
  const double f = options.per_process_gpu_memory_fraction;
  if (!(f > 0.0 && f <= 1.0))
    throw op_error<ValueError>(
        op, "expected per_process_gpu_memory_fraction in (0, 1], got ", f);
  if (options.allocator_type != "BFC" &&
      options.allocator_type != "cuda_malloc")
    throw op_error<ValueError>(
        op, "expected allocator_type \"BFC\" or \"cuda_malloc\", got \"",
        options.allocator_type, "\"");
  std::lock_guard lock(g_mu);
  if (g_frozen)
    throw op_error<ValueError>(
        op,
        "expected a call before any GPU allocates, got one after: the "
        "options in force stay");
  g_options = options;
}

GpuMemoryOptions gpu_memory_options() {
  std::lock_guard lock(g_mu);
  return g_options;
}

}  // namespace tapeflow::config

namespace tapeflow {

config::GpuMemoryOptions freeze_gpu_memory_options() {
  std::lock_guard lock(config::g_mu);
  config::g_frozen = true;
  return config::g_options;
}

}  // namespace tapeflow
