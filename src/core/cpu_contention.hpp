#pragma once
// How many of this process's CPUs the rest of the machine leaves it: the
// intra-op thread count shrinks while other processes run, because an OpenMP
// team with more threads than free cores waits at every barrier for a thread
// the OS has parked (a 2-thread CNN step ran 4.4x slower than at 1 thread
// next to one busy process).
#include <sched.h>

#include <atomic>
#include <cstdint>
#include <mutex>

namespace tapeflow::detail {

/**
 * CPU time used by other processes on the CPUs this process may run on,
 * in CPUs (0 = idle, 1.5 = one and a half CPUs busy), from two samples of
 * /proc/stat and /proc/self/stat `window_ms` apart. Pure parts, for tests:
 */
struct CpuTimes {
  uint64_t busy = 0;   // all processes, on the allowed CPUs (clock ticks)
  uint64_t total = 0;  // busy + idle on the allowed CPUs
  uint64_t self = 0;   // this process, any CPU
};
/** CPUs' worth of other processes' time between two samples. */
double others_load(const CpuTimes& before, const CpuTimes& after, int cpus);
/**
 * Threads to run with: `cap` while others keep less than half a CPU busy,
 * else no more than the CPUs they leave free (rounded), and at least 1.
 */
int threads_left(int cap, int cpus, double others);

/**
 * Other processes' runnable tasks at one instant, in CPUs: the kernel's
 * procs_running (every CPU's run queues, the reading thread included) less
 * this process's running threads, at most `cpus`. A process's first
 * thread count comes from it, before the first ~200 ms window ends.
 */
double others_running(int procs_running, int own_running, int cpus);

/**
 * The CPUs other processes keep busy, as this process's threads see them:
 * at construction from three instants (others_running, the least of them:
 * a task that only passes through is not a load) where this process may run
 * on every CPU of the machine, then over windows of ~200 ms of /proc/stat
 * ticks, read again by whichever thread asks once a window has passed (no
 * thread of its own). Tasks a CFS quota throttles leave the run queues, and
 * so go uncounted until the first window.
 */
class LoadMonitor {
 public:
  LoadMonitor();
  /** threads_left(cap, ...) for the latest reading; `cap` if none. */
  int threads(int cap);
  /** Whether the run queues gave a reading at construction. */
  bool read_at_start() const { return read_at_start_; }

 private:
  bool sample(CpuTimes& t, int& machine) const;
  void refresh();

  std::mutex mu_;  // one sampler at a time; others use the last answer
  cpu_set_t allowed_{};
  int cpus_ = 0;
  bool usable_ = false;
  bool read_at_start_ = false;
  CpuTimes last_;
  std::atomic<int64_t> last_ns_{0};  // read by every caller, set under mu_
  std::atomic<double> others_{0.0};
};

/**
 * LoadMonitor::threads(cap) of the process's monitor (made by the first
 * call, and again by a forked child's); `cap` when /proc cannot be read or
 * adaptation is off
 * (config::set_adapt_to_load(false), env TAPEFLOW_ADAPT_TO_LOAD=0).
 */
int uncontended_threads(int cap);

/** config::set_adapt_to_load's switch. */
extern std::atomic<bool> g_adapt_to_load;

}  // namespace tapeflow::detail
