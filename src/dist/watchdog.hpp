#pragma once
// The watchdog: MPI has no timeouts, and a rank that hangs (stopped,
// deadlocked, cut off by the network) leaves every other rank blocked for
// good. Each collective, message and wait registers while in flight; a thread
// aborts the whole job once one is older than TAPEFLOW_DIST_TIMEOUT.
#include <cstdint>
#include <string>

namespace tapeflow::dist::detail {

/** Exit status of a job the watchdog ended (EX_TEMPFAIL: retry it). */
inline constexpr int kWatchdogExit = 75;

/**
 * Starts the thread (once per process) and a SIGTERM handler that names the
 * last op when mpirun ends the job because another rank died.
 * TAPEFLOW_DIST_TIMEOUT (seconds, default 60) applies once a first step
 * completed; before, TAPEFLOW_DIST_INIT_TIMEOUT (default 300) does. A value
 * that is not a number of seconds > 0 is a ValueError.
 */
void start_watchdog(int rank);
void stop_watchdog();
/** Switches from the first-step timeout to the steady one. */
void step_completed();
/**
 * A DDP or parameter client was made: the first-step timeout applies again
 * until it calls step_completed(). Without one, the first operation that
 * completes is the first step (a program of plain collectives).
 */
void expect_steps();
/** The timeout that applies now, in seconds. */
double current_timeout();
/** Prints "[dist] rank R: <why>; ending the job" and ends it with status 75. */
[[noreturn]] void end_job(const std::string& why);

/**
 * An operation in flight, from construction to end() or destruction.
 * `long_wait`: one that may legitimately wait for slower ranks (MPI_Finalize
 * waits for every rank to finish its work): it gets the first-step timeout.
 */
class InFlight {
 public:
  InFlight(const char* op, uint64_t seq, bool long_wait = false);
  ~InFlight() { end(); }
  InFlight(const InFlight&) = delete;
  InFlight& operator=(const InFlight&) = delete;
  void end();

 private:
  uint64_t id_ = 0;
};

}  // namespace tapeflow::dist::detail
