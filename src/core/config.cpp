#include "tapeflow/config.hpp"

#include <omp.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <mutex>
#include <set>
#include <string>
#include <tuple>
#include <utility>

#include "core/cpu_contention.hpp"
#include "core/op_error.hpp"
#include "core/registry.hpp"
#include "tapeflow/core/error.hpp"
#include "tapeflow/data/inter_op_pool.hpp"

namespace tapeflow {
namespace {

std::atomic<int> g_intra_threads{0};  // 0: not set, use OpenMP's default
std::atomic<bool> g_soft_placement{true};
std::atomic<config::Float32Precision> g_f32_precision{
    config::Float32Precision::highest};

bool env_flag(const char* name) {
  const char* v = std::getenv(name);
  return v && *v && std::strcmp(v, "0") != 0;
}
std::atomic<bool> g_log_placement{env_flag("TAPEFLOW_LOG_PLACEMENT")};

// OpenMP's runtime aborts the process where it cannot start the threads it
// was told to: a count in the thousands is a slip, not a machine.
constexpr int kMostThreads = 4096;

void check_threads(int n, const char* op) {
  if (n < 1 || n > kMostThreads)
    throw op_error<ValueError>(op, "expected a thread count in [1, ",
                               kMostThreads, "], got ", n);
}

}  // namespace

namespace config {

void set_intra_op_threads(int n) {
  check_threads(n, "set_intra_op_threads");
  g_intra_threads = n;
  omp_set_num_threads(n);  // oneDNN shares this OpenMP runtime
}
int intra_op_threads() {
  const int n = g_intra_threads.load(std::memory_order_relaxed);
  // OpenMP's own default (OMP_NUM_THREADS, else the cores), read before
  // any thread count is set: the kernels' sync_threads() changes it later.
  static const int openmp_default = omp_get_max_threads();
  return detail::uncontended_threads(n > 0 ? n : openmp_default);
}
void set_adapt_to_load(bool on) {
  detail::g_adapt_to_load = on;
}
bool adapt_to_load() {
  return detail::g_adapt_to_load;
}
void set_inter_op_threads(int n) {
  check_threads(n, "set_inter_op_threads");
  const int started = data::detail::g_inter_op_pool_size.load();
  if (started > 0 && started != n)
    throw op_error<ValueError>(
        "set_inter_op_threads",
        "expected a call before the inter-op pool started (the first "
        "parallel map), got one for ",
        n, " threads after it started with ", started);
  data::detail::g_inter_op_threads = n;
}
int inter_op_threads() {
  const int started = data::detail::g_inter_op_pool_size.load();
  return started > 0 ? started : data::detail::inter_op_threads_wanted();
}
void set_soft_placement(bool on) {
  g_soft_placement = on;
}
bool soft_placement() {
  return g_soft_placement;
}
void log_device_placement(bool on) {
  g_log_placement = on;
}
bool log_device_placement() {
  return g_log_placement;
}
void set_float32_matmul_precision(Float32Precision precision) {
  g_f32_precision = precision;
}
void set_float32_matmul_precision(std::string_view name) {
  static constexpr std::pair<std::string_view, Float32Precision> names[] = {
      {"highest", Float32Precision::highest},
      {"high", Float32Precision::high},
      {"medium", Float32Precision::medium}};
  for (const auto& [known, precision] : names)
    if (name == known) return set_float32_matmul_precision(precision);
  throw ValueError(
      "[set_float32_matmul_precision] expected \"highest\", \"high\" or "
      "\"medium\", got \"" +
      std::string(name) + "\"");
}
Float32Precision float32_matmul_precision() {
  return g_f32_precision.load(std::memory_order_relaxed);
}

}  // namespace config

bool placement_logging_enabled() {
  return g_log_placement.load(std::memory_order_relaxed);
}

void log_placement(const char* op, Device device, const char* backend,
                   bool soft) {
  if (!placement_logging_enabled()) return;
  static std::mutex mu;
  static std::set<std::tuple<std::string, std::string, std::string, bool>> seen;
  std::lock_guard lock(mu);
  if (!seen.emplace(op, device.str(), backend, soft).second) return;
  std::cerr << op << " -> " << device.str() << " (" << backend
            << (soft ? ", soft placement" : "") << ")\n";
}

void ensure_backends_registered(DeviceType type) {
  static std::once_flag once;
  std::call_once(once, [] {
    Registry r;
    register_cpu(r);
  });
  // Until now only an allocation loaded it, after the first op had looked
  // for its kernel: that op soft-placed, or threw with soft placement off.
  if (type != DeviceType::cpu) device_backend(type);
}

}  // namespace tapeflow
