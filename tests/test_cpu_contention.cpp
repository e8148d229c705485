// Adapting the intra-op thread count to other processes' load: the load from
// two /proc samples, from the run queues at one instant, and the thread count
// from it (hand-computed), then live: a busy child process takes a CPU and the
// count drops, and comes back when the child is gone; a monitor made next to
// a busy process counts it from the start; a forked child measures its own.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "core/cpu_contention.hpp"
#include "support/check.hpp"

namespace detail = tapeflow::detail;

TEST_CASE("others' load: busy ticks less this process's, in CPUs") {
  // 2 CPUs, 400 ticks elapsed (200 each): 200 busy, 100 of them ours.
  const detail::CpuTimes before{100, 400, 50}, after{300, 800, 150};
  CHECK(detail::others_load(before, after, 2) == doctest::Approx(0.5));
  // All busy time ours: nobody else.
  const detail::CpuTimes mine{300, 800, 250};
  CHECK(detail::others_load(before, mine, 2) == 0.0);
  // No time elapsed, or counters that went back: no load.
  CHECK(detail::others_load(after, after, 2) == 0.0);
  CHECK(detail::others_load(after, before, 2) == 0.0);
}

TEST_CASE("threads left: the cap until others take half a CPU") {
  CHECK(detail::threads_left(2, 2, 0.0) == 2);
  CHECK(detail::threads_left(2, 2, 0.4) == 2);
  CHECK(detail::threads_left(2, 2, 1.0) == 1);
  CHECK(detail::threads_left(2, 2, 2.0) == 1);  // never below 1
  CHECK(detail::threads_left(3, 2, 0.0) == 3);  // oversubscribing by choice
  CHECK(detail::threads_left(3, 2, 1.0) == 1);
  CHECK(detail::threads_left(4, 8, 3.0) == 4);  // 5 free: the cap of 4
  CHECK(detail::threads_left(8, 8, 3.0) == 5);
  CHECK(detail::threads_left(8, 8, 2.6) == 5);  // 5.4 free CPUs
  CHECK(detail::threads_left(1, 8, 7.0) == 1);
}

TEST_CASE("others running: the run queues less this process's threads") {
  CHECK(detail::others_running(3, 1, 2) == 2.0);  // us and two others
  CHECK(detail::others_running(2, 1, 2) == 1.0);
  CHECK(detail::others_running(1, 1, 2) == 0.0);
  CHECK(detail::others_running(3, 3, 4) == 0.0);  // our own threads only
  CHECK(detail::others_running(9, 1, 2) == 2.0);  // at most the CPUs
  // The two files are read one after the other: a thread of ours may start
  // running between them.
  CHECK(detail::others_running(1, 2, 2) == 0.0);
}

namespace {

/** A child process that keeps a CPU busy until killed. */
pid_t start_busy_process() {
  const pid_t busy = fork();
  REQUIRE(busy >= 0);
  if (busy == 0) {
    volatile uint64_t spin = 0;
    for (;;) spin = spin + 1;
  }
  return busy;
}
void stop(pid_t busy) {
  kill(busy, SIGKILL);
  waitpid(busy, nullptr, 0);
}

int allowed_cpus() {
  cpu_set_t allowed;
  REQUIRE(sched_getaffinity(0, sizeof allowed, &allowed) == 0);
  return CPU_COUNT(&allowed);
}

/** Keeps this thread busy for `d`. */
void spin_for(std::chrono::milliseconds d) {
  const auto end = std::chrono::steady_clock::now() + d;
  volatile uint64_t spin = 0;
  while (std::chrono::steady_clock::now() < end) spin = spin + 1;
}

/** Polls intra_op_threads() for up to 5 s until it equals `want`. */
bool reaches(int want) {
  for (int i = 0; i < 100; ++i) {
    if (tpf::config::intra_op_threads() == want) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

/**
 * Turns adaptation on at `cpus` threads and true where the count stays
 * there; false (adaptation off again) with one CPU or where something else
 * already keeps a CPU busy (a build, other tests): a drop could not be told
 * from it.
 */
bool adapting_on_quiet_machine(int cpus) {
  if (cpus < 2) {
    MESSAGE("one CPU: nothing to adapt");
    return false;
  }
  tpf::config::set_adapt_to_load(true);
  tpf::config::set_intra_op_threads(cpus);
  if (reaches(cpus)) return true;
  MESSAGE("the machine is not quiet: skipping the live check");
  tpf::config::set_adapt_to_load(false);
  return false;
}

}  // namespace

TEST_CASE("a busy process takes a thread away; its end gives it back") {
  const int cpus = allowed_cpus();
  if (!adapting_on_quiet_machine(cpus)) return;
  const pid_t busy = start_busy_process();
  const bool dropped = reaches(cpus - 1);
  stop(busy);
  CHECK(dropped);
  CHECK(reaches(cpus));
  tpf::config::set_adapt_to_load(false);
  CHECK(tpf::config::intra_op_threads() == cpus);
}

// Before the first window of ticks ends, a fresh monitor already counts the
// busy process from the run queues: a process started next to it does not
// spend its first ~200 ms at the thread cap.
TEST_CASE("a new process's first thread count already sees a busy process") {
  const int cpus = allowed_cpus();
  detail::LoadMonitor quiet;
  if (cpus < 2 || !quiet.read_at_start()) {
    MESSAGE(
        "one CPU, or not every CPU of the machine allowed: no first "
        "reading to check");
    return;
  }
  if (quiet.threads(cpus) != cpus) {
    MESSAGE("the machine is not quiet: skipping the live check");
    return;
  }
  const pid_t busy = start_busy_process();
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // running
  detail::LoadMonitor next_to_busy;
  const int threads = next_to_busy.threads(cpus);
  stop(busy);
  REQUIRE(next_to_busy.read_at_start());
  CHECK(threads <= cpus - 1);
}

// A forked child starts its own monitor: one copied from the parent would
// subtract the parent's CPU time, not the child's, and count the child's
// own busy window as another process's load.
TEST_CASE("a forked child measures others' load from its own start") {
  const int cpus = allowed_cpus();
  if (!adapting_on_quiet_machine(cpus)) return;
  // The parent's last reading holds more CPU time of its own than the
  // child will have used: a copy of it in the child would subtract nothing
  // and count the child's busy window as another process's load.
  spin_for(std::chrono::milliseconds(400));
  tpf::config::intra_op_threads();  // reads again: a window has passed
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    spin_for(std::chrono::milliseconds(300));
    _exit(tpf::config::intra_op_threads() == cpus ? 0 : 1);
  }
  int status = 0;
  waitpid(child, &status, 0);
  tpf::config::set_adapt_to_load(false);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
}
