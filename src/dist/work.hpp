#pragma once
// A nonblocking collective as a list of phases: each runs once the MPI
// requests posted before it have completed, and may post more (the canonical
// all_reduce is alltoall, then a fold, then allgather). Open MPI makes no
// progress on its own, so test() is what moves a collective along.
#include <mpi.h>

#include <deque>
#include <functional>
#include <vector>

#include "dist/watchdog.hpp"
#include "tapeflow/dist/communicator.hpp"

namespace tapeflow::dist::detail {

struct WorkState {
  WorkState(const char* op_name, uint64_t sequence, bool blocking_calls)
      : op(op_name),
        seq(sequence),
        blocking(blocking_calls),
        flight(op_name, sequence) {}
  /** Completes what is still in flight: the peers wait for every phase. */
  ~WorkState();
  WorkState(const WorkState&) = delete;
  WorkState& operator=(const WorkState&) = delete;

  /** A request slot for the next MPI_I* call. */
  MPI_Request* request() { return &requests.emplace_back(MPI_REQUEST_NULL); }

  const char* op;
  uint64_t seq;
  /** Phases call MPI's blocking functions instead of posting requests. */
  bool blocking;
  InFlight flight;
  std::vector<MPI_Request> requests;
  /** The statuses of the requests that completed last (recv reads its count).
   */
  std::vector<MPI_Status> statuses;
  std::deque<std::function<void(WorkState&)>> phases;
  Tensor result;
  bool done = false;
  /** Set for the phase running: whether it may block (wait(), not test()). */
  bool may_block = false;
  /**
   * Set by a phase that could not go on without blocking and put itself
   * back at the front: advance() returns "not yet".
   */
  bool not_ready = false;
};

/** Runs phases whose requests are complete; with `block`, until the end. */
bool advance(WorkState& w, bool block);

struct CommState;
/** Completes `c`'s nonblocking collective in flight: every collective calls
 * this before it starts. */
void settle(CommState& c);
/** Records `w` as `c`'s collective in flight (nonblocking ones only). */
void track(CommState& c, const std::shared_ptr<WorkState>& w);

}  // namespace tapeflow::dist::detail
