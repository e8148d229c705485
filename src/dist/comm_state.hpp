#pragma once
// What a Communicator holds, and the MPI pieces every collective uses. MPI's
// headers stay in src/dist.
#include <mpi.h>

#include <cstdint>
#include <memory>

#include "tapeflow/core/dtype.hpp"
#include "tapeflow/dist/communicator.hpp"

namespace tapeflow::dist::detail {

struct WorkState;

struct CommState {
  /** MPI_COMM_NULL: a world of one in a process mpirun did not start. */
  MPI_Comm comm = MPI_COMM_NULL;
  bool owned = false;  // MPI_Comm_free at the end (split() results)
  int rank = 0, size = 1, local_rank = 0, local_size = 1;
  /** Collectives issued on this group; the watchdog and checks name it. */
  uint64_t seq = 0;
  /**
   * The nonblocking collective still in flight, if any. MPI needs every rank
   * to start its collectives in the same order, and a canonical all_reduce
   * starts its allgather only when its alltoall is done, at a time that
   * differs by rank: so a rank finishes this one before it starts the next
   * collective (settle()), and the order is the program's on every rank.
   */
  std::weak_ptr<WorkState> in_flight;
  /** NCCL for CUDA tensors: 0 not tried yet, 1 ready, -1 host buffers. */
  int nccl_state = 0;
  void* nccl_comm = nullptr;
  int nccl_device = -1;
  ~CommState();
};

/** Throws DistError "[op] MPI: <MPI's message>" unless rc is MPI_SUCCESS. */
void check_mpi(int rc, const char* op);
MPI_Datatype mpi_type(DType dtype);
/** MPI counts are int: larger messages are refused, not truncated. */
int mpi_count(int64_t n, const char* op);
/** Fills rank, size and the per-machine numbers of an MPI communicator. */
void describe(CommState& c);
/** Whether TAPEFLOW_DIST_DEBUG=1 asks for the cross-rank argument checks. */
bool debug_checks();

}  // namespace tapeflow::dist::detail
