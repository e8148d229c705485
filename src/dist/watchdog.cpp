#include "dist/watchdog.hpp"

#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include "core/op_error.hpp"
#include "tapeflow/core/error.hpp"

namespace tapeflow::dist::detail {
namespace {

using Clock = std::chrono::steady_clock;

struct Entry {
  const char* op;
  uint64_t seq;
  Clock::time_point start;
  bool long_wait;
  bool warned = false;
};

/**
 * A number of seconds > 0 (inf: never) from the environment, or `fallback`
 * when unset. Anything else is a ValueError: a timeout of "abc" or "5abc"
 * silently became 60 s or 5 s.
 */
double seconds_from_env(const char* name, double fallback) {
  const char* v = std::getenv(name);
  if (v == nullptr) return fallback;
  char* end = nullptr;
  const double s = std::strtod(v, &end);
  if (end == v || *end != '\0' || !(s > 0))
    throw op_error<ValueError>("init", "expected ", name,
                               " to be a number of seconds > 0, got '", v, "'");
  return s;
}

struct Watchdog {
  std::mutex mu;
  std::condition_variable wake;
  std::map<uint64_t, Entry> in_flight;
  uint64_t next_id = 1;
  bool running = false, stop = false;
  int rank = 0;
  double steady_timeout = 60, first_timeout = 300;  // read by start_watchdog
  std::atomic<bool> first_step_done{false};
  // Whether a DDP or parameter client says when its first step is done;
  // without one, the first operation that completes ends the first step.
  std::atomic<bool> steps_expected{false};
  std::thread thread;
  // Read by the SIGTERM handler: string literals and plain integers only.
  std::atomic<const char*> last_op{"init"};
  std::atomic<uint64_t> last_seq{0};
};
Watchdog& dog() {
  static Watchdog* w = new Watchdog;  // leaked: the handler may run at exit
  return *w;
}

void check_ages(Watchdog& w, std::unique_lock<std::mutex>&) {
  // Before step one completes only the first-step timeout applies; a short
  // TAPEFLOW_DIST_TIMEOUT set for a test still applies when it is the larger.
  const auto now = Clock::now();
  for (auto& [id, e] : w.in_flight) {
    const double limit = e.long_wait ? w.first_timeout : current_timeout();
    const double age = std::chrono::duration<double>(now - e.start).count();
    if (age >= limit) {
      char why[160];
      std::snprintf(why, sizeof why,
                    "%s (seq %llu) has waited %.1f s, past the %g s timeout "
                    "(TAPEFLOW_DIST_TIMEOUT)",
                    e.op, static_cast<unsigned long long>(e.seq), age, limit);
      end_job(why);
    }
    if (!e.warned && age >= limit / 2) {
      e.warned = true;
      std::fprintf(stderr,
                   "[dist] rank %d: %s (seq %llu) has waited %.1f s; the job "
                   "ends at %g s\n",
                   w.rank, e.op, static_cast<unsigned long long>(e.seq), age,
                   limit);
    }
  }
}

void watch() {
  Watchdog& w = dog();
  std::unique_lock lock(w.mu);
  // At least 1 ms: a timeout of 1e-9 s spun the thread on every core.
  const auto tick = std::chrono::duration<double>(
      std::clamp(w.steady_timeout / 30, 1e-3, 0.1));
  while (!w.stop) {
    w.wake.wait_for(lock, tick);
    check_ages(w, lock);
  }
}

/** Async-signal-safe: one write() of a line built in a stack buffer. */
void on_sigterm(int sig) {
  Watchdog& w = dog();
  char line[160];
  int n = std::snprintf(line, sizeof line,
                        "[dist] rank %d: terminated (another rank failed?); "
                        "last op %s seq %llu\n",
                        w.rank, w.last_op.load(),
                        static_cast<unsigned long long>(w.last_seq.load()));
  if (n > 0)
    (void)!write(STDERR_FILENO, line, std::min<size_t>(n, sizeof line));
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

}  // namespace

void start_watchdog(int rank) {
  Watchdog& w = dog();
  std::lock_guard lock(w.mu);
  if (w.running) return;
  w.steady_timeout = seconds_from_env("TAPEFLOW_DIST_TIMEOUT", 60);
  w.first_timeout = std::max(
      w.steady_timeout, seconds_from_env("TAPEFLOW_DIST_INIT_TIMEOUT", 300));
  w.rank = rank;
  w.running = true;
  w.thread = std::thread(watch);
  struct sigaction old {};
  sigaction(SIGTERM, nullptr, &old);
  if (old.sa_handler == SIG_DFL) std::signal(SIGTERM, on_sigterm);
}

void stop_watchdog() {
  Watchdog& w = dog();
  {
    std::lock_guard lock(w.mu);
    if (!w.running) return;
    w.stop = true;
    w.running = false;
  }
  w.wake.notify_all();
  w.thread.join();
}

void step_completed() {
  dog().first_step_done = true;
}

void expect_steps() {
  Watchdog& w = dog();
  w.steps_expected = true;
  w.first_step_done = false;
}

double current_timeout() {
  const Watchdog& w = dog();
  return w.first_step_done ? w.steady_timeout : w.first_timeout;
}

void end_job(const std::string& why) {
  std::fprintf(stderr, "[dist] rank %d: %s; ending the job\n", dog().rank,
               why.c_str());
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, kWatchdogExit);
  std::_Exit(kWatchdogExit);
}

InFlight::InFlight(const char* op, uint64_t seq, bool long_wait) {
  Watchdog& w = dog();
  w.last_op = op;
  w.last_seq = seq;
  std::lock_guard lock(w.mu);
  id_ = w.next_id++;
  w.in_flight.emplace(id_, Entry{op, seq, Clock::now(), long_wait});
}

void InFlight::end() {
  if (id_ == 0) return;
  Watchdog& w = dog();
  std::lock_guard lock(w.mu);
  w.in_flight.erase(id_);
  id_ = 0;
  if (!w.steps_expected) w.first_step_done = true;
}

}  // namespace tapeflow::dist::detail
