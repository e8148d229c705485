#include "core/cpu_contention.hpp"

#include <dirent.h>
#include <pthread.h>
#include <sched.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>
#include <thread>

namespace tapeflow::detail {

double others_load(const CpuTimes& before, const CpuTimes& after, int cpus) {
  if (after.total <= before.total || after.busy < before.busy) return 0.0;
  const double busy = double(after.busy - before.busy);
  const double self =
      after.self >= before.self ? double(after.self - before.self) : 0.0;
  const double per_cpu = double(after.total - before.total) / cpus;
  return std::max(0.0, (busy - self) / per_cpu);
}

int threads_left(int cap, int cpus, double others) {
  // Below half a CPU of others, the cap stands, more threads than CPUs
  // included (a user's explicit choice); beyond, the free CPUs, rounded.
  if (others < 0.5) return cap;
  const int free_cpus = static_cast<int>(std::lround(cpus - others));
  return std::max(1, std::min(cap, free_cpus));
}

namespace {

constexpr int64_t kWindowNs = 200'000'000;

int64_t now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  return int64_t(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

/**
 * Sums the "cpuN" lines of /proc/stat for the CPUs in `allowed`; `machine`
 * counts every cpuN line.
 */
bool read_cpu_times(const cpu_set_t& allowed, CpuTimes& t, int& machine) {
  FILE* f = std::fopen("/proc/stat", "r");
  if (!f) return false;
  char line[512];
  t.busy = t.total = 0;
  machine = 0;
  bool any = false;
  while (std::fgets(line, sizeof line, f)) {
    if (std::strncmp(line, "cpu", 3) != 0) break;  // the cpu lines come first
    // Not the "cpu" line of all CPUs together, whose first count %d would
    // read as a CPU number.
    if (!std::isdigit(static_cast<unsigned char>(line[3]))) continue;
    int cpu = -1;
    unsigned long long v[8] = {};
    if (std::sscanf(line, "cpu%d %llu %llu %llu %llu %llu %llu %llu %llu", &cpu,
                    &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6],
                    &v[7]) != 9)
      continue;
    ++machine;
    if (cpu < 0 || cpu >= CPU_SETSIZE || !CPU_ISSET(cpu, &allowed)) continue;
    // user nice system idle iowait irq softirq steal: a hypervisor's steal
    // takes the CPU from us as another process would.
    const uint64_t idle = v[3] + v[4];
    const uint64_t busy = v[0] + v[1] + v[2] + v[5] + v[6] + v[7];
    t.busy += busy;
    t.total += busy + idle;
    any = true;
  }
  std::fclose(f);
  return any;
}

bool read_self_ticks(uint64_t& ticks) {
  FILE* f = std::fopen("/proc/self/stat", "r");
  if (!f) return false;
  char buf[1024];
  const size_t n = std::fread(buf, 1, sizeof buf - 1, f);
  std::fclose(f);
  buf[n] = '\0';
  // The command name may hold spaces: fields count from its closing ')'.
  const char* p = std::strrchr(buf, ')');
  if (!p) return false;
  unsigned long long utime = 0, stime = 0;
  if (std::sscanf(p + 2,
                  "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu",
                  &utime, &stime) != 2)
    return false;
  ticks = utime + stime;
  return true;
}

/**
 * The machine's runnable tasks (the kernel's nr_running, procs_running in
 * /proc/stat), from /proc/loadavg's "R/T" field: /proc/stat's interrupt
 * lines take milliseconds to build on large machines. -1 if unreadable.
 */
int read_procs_running() {
  FILE* f = std::fopen("/proc/loadavg", "r");
  if (!f) return -1;
  int running = -1;
  if (std::fscanf(f, "%*f %*f %*f %d/", &running) != 1) running = -1;
  std::fclose(f);
  return running;
}

/** This process's threads in state R (running or runnable), or -1. */
int read_own_running() {
  DIR* tasks = opendir("/proc/self/task");
  if (!tasks) return -1;
  int running = 0;
  while (const dirent* e = readdir(tasks)) {
    if (e->d_name[0] == '.') continue;
    char path[sizeof "/proc/self/task//stat" + sizeof e->d_name];
    std::snprintf(path, sizeof path, "/proc/self/task/%s/stat", e->d_name);
    FILE* f = std::fopen(path, "r");
    if (!f) continue;  // the thread ended since readdir
    char buf[512];
    const size_t n = std::fread(buf, 1, sizeof buf - 1, f);
    std::fclose(f);
    buf[n] = '\0';
    const char* p = std::strrchr(buf, ')');  // the state follows the name
    if (p && p[1] == ' ' && p[2] == 'R') ++running;
  }
  closedir(tasks);
  return running;
}

/**
 * others_running at three instants 1 ms apart, the least of them; none
 * where /proc cannot be read.
 */
std::optional<double> instant_others(int cpus) {
  double least = cpus;
  for (int i = 0; i < 3; ++i) {
    if (i > 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    const int running = read_procs_running(), own = read_own_running();
    if (running < 0 || own < 0) return std::nullopt;
    least = std::min(least, others_running(running, own, cpus));
  }
  return least;
}

bool adapt_from_env() {
  const char* v = std::getenv("TAPEFLOW_ADAPT_TO_LOAD");
  return !(v && std::strcmp(v, "0") == 0);
}

}  // namespace

std::atomic<bool> g_adapt_to_load{adapt_from_env()};

double others_running(int procs_running, int own_running, int cpus) {
  return std::clamp(double(procs_running - own_running), 0.0, double(cpus));
}

LoadMonitor::LoadMonitor() {
  usable_ = sched_getaffinity(0, sizeof allowed_, &allowed_) == 0;
  cpus_ = usable_ ? CPU_COUNT(&allowed_) : 0;
  int machine = 0;
  usable_ = usable_ && cpus_ > 0 && sample(last_, machine);
  last_ns_ = now_ns();
  // The run queues count every CPU's tasks: only where all are ours.
  if (!usable_ || machine != cpus_) return;
  if (const std::optional<double> others = instant_others(cpus_)) {
    others_.store(*others, std::memory_order_relaxed);
    read_at_start_ = true;
  }
}

bool LoadMonitor::sample(CpuTimes& t, int& machine) const {
  return read_cpu_times(allowed_, t, machine) && read_self_ticks(t.self);
}

void LoadMonitor::refresh() {
  const int64_t now = now_ns();
  if (now - last_ns_.load(std::memory_order_relaxed) < kWindowNs) return;
  std::unique_lock lock(mu_, std::try_to_lock);
  if (!lock || now - last_ns_.load(std::memory_order_relaxed) < kWindowNs)
    return;
  CpuTimes t;
  int machine = 0;
  if (!sample(t, machine)) return;
  others_.store(others_load(last_, t, cpus_), std::memory_order_relaxed);
  last_ = t;
  last_ns_.store(now, std::memory_order_relaxed);
}

int LoadMonitor::threads(int cap) {
  if (!usable_) return cap;
  refresh();
  return threads_left(cap, cpus_, others_.load(std::memory_order_relaxed));
}

namespace {

std::atomic<bool> g_forked{false};

/**
 * The process's monitor; a fresh one in a forked child, whose copy of the
 * parent's would count the child's own time as others' (the parent's ticks
 * it started from are not the child's) and may hold a locked mutex.
 * Replaced monitors are never freed: another thread may be reading one.
 */
LoadMonitor& process_monitor() {
  static std::atomic<LoadMonitor*> monitor = [] {
    pthread_atfork(nullptr, nullptr, [] { g_forked.store(true); });
    return new LoadMonitor();
  }();
  // A load first: every kernel asks, and an exchange would write the line.
  if (g_forked.load(std::memory_order_relaxed) && g_forked.exchange(false))
    monitor.store(new LoadMonitor());
  return *monitor.load();
}

}  // namespace

int uncontended_threads(int cap) {
  if (cap <= 1 || !g_adapt_to_load.load(std::memory_order_relaxed)) return cap;
  return process_monitor().threads(cap);
}

}  // namespace tapeflow::detail
