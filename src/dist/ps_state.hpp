#pragma once
// A ParameterClient's state on every task, and the ps service loop. Ranks:
// ps task k is MPI rank k, worker w is rank num_ps + w (ClusterSpec order).
// Messages travel on a duplicate of the world communicator, so that they
// never meet the program's own collectives.
#include <mpi.h>

#include <memory>
#include <vector>

#include "dist/server_state.hpp"
#include "tapeflow/dist/parameter_server.hpp"

namespace tapeflow::dist::detail {

// kPull carries the lowest global step the worker will take; kValues the
// ps task's global step, then the values; kPush the worker's global step,
// a defined-flag per variable, then the defined gradients.
enum PsTag : int { kInit = 101, kPull, kValues, kPush, kDone, kSave, kSaved };

/** A variable, or rows [begin, begin + rows) of it when it is split. */
struct Piece {
  size_t var;
  int64_t begin, rows;
  bool whole;
};

struct PsState {
  std::shared_ptr<ServerState> server;
  PsOptions options;
  MPI_Comm comm = MPI_COMM_NULL;
  int num_ps = 0, num_workers = 0;
  std::vector<Variable> created;  // what create() was given (local copies)
  std::vector<Piece> pieces;      // what the ps tasks hold
  std::vector<int> owner;         // per piece, its ps task
  // On a ps task: the variables it holds and their optimizer.
  std::vector<Variable> shard;
  std::unique_ptr<optim::Optimizer> optimizer;
  PsStats stats;
  int64_t global_step = 0;  // ps: updates so far; worker: last pulled
  int64_t resumed_step = 0;
  // On a worker.
  int64_t clock = 0;
  bool done = false;

  ~PsState();
  /** Indices of the pieces ps task k holds, in order. */
  std::vector<size_t> owned_by(int k) const;
  /** Piece p's part of `t` (a variable, its gradient): a view of its rows. */
  Tensor piece_of(const Tensor& t, size_t p) const;
  int worker_rank(int w) const { return num_ps + w; }
  bool sync() const { return options.replicas_to_aggregate > 0; }
};

/**
 * Sends `header` and then each tensor's bytes as one message, straight from
 * their buffers (an hindexed datatype over their addresses, no packing).
 */
void send_parts(const std::vector<char>& header,
                const std::vector<Tensor>& parts, int dest, int tag,
                MPI_Comm comm, const char* op);
/** Writes consecutive values from `data` into each tensor (or view), in
 * place. */
void unpack_into(const char* data, size_t size, const std::vector<Tensor>& into,
                 const char* op);

/** The ps task a PsScope gave `v` at its creation, or -1. */
int pinned_task(const Variable& v);

/** Committed checkpoints: the highest n of "<dir>/ckpt-<n>.json", or -1. */
int64_t latest_committed(const std::string& dir);
std::string shard_path(const std::string& dir, int64_t n, int k, int of);
/** A ps task's shard, optimizer slots and steps, written atomically. */
void save_shard(const PsState& s, int64_t n);
/** Loads this ps task's shard of checkpoint n into its variables and slots. */
void load_shard(PsState& s, int64_t n);

/** Serves pulls and pushes until every worker has said done. */
void serve(PsState& s);

}  // namespace tapeflow::dist::detail
