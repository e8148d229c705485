#pragma once
// tpf::dist: processes that train together (MPI ranks) and the collectives
// they run on tensors. See docs/distributed.md.
#include <cstdint>
#include <memory>
#include <vector>

#include "tapeflow/autograd.hpp"
#include "tapeflow/core/error.hpp"
#include "tapeflow/core/tensor.hpp"

namespace tapeflow::dist {

/** A collective or message that cannot be carried out as asked. */
class DistError : public Error {
  using Error::Error;
};
/** An operation older than TAPEFLOW_DIST_TIMEOUT (the watchdog's view). */
class TimeoutError : public DistError {
  using DistError::DistError;
};
/** Replicas that should hold equal parameters do not. */
class ReplicaDivergenceError : public DistError {
  using DistError::DistError;
};

/** How all_reduce and reduce_scatter combine the ranks' values. */
enum class ReduceOp { sum, mean, max, min };
using Op = ReduceOp;

/**
 * The order of the sum. `fast` is MPI's own (fastest; the result may change
 * with the number of ranks' placement and the algorithm MPI picks).
 * `canonical` folds the ranks' values left to right in rank order,
 * ((x0 + x1) + ...) + x(N-1), on every element: bitwise reproducible, and
 * what simulate() computes in one process.
 */
enum class Order { fast, canonical };

namespace detail {
struct WorkState;
struct CommState;
}  // namespace detail

/** A nonblocking collective in flight. wait() may be called more than once. */
class Work {
 public:
  Work() = default;
  explicit Work(std::shared_ptr<detail::WorkState> state)
      : state_(std::move(state)) {}
  /** Blocks until done; throws the collective's DistError if it failed. */
  void wait();
  /** Advances the collective; true once it is done (then wait() is free). */
  bool test();
  /** The collective's output: the tensor itself for in-place ones. */
  Tensor result();

 private:
  std::shared_ptr<detail::WorkState> state_;
};

/**
 * A group of ranks. Every rank of the group must call the same collectives
 * in the same order with tensors of the same shape and dtype;
 * TAPEFLOW_DIST_DEBUG=1 checks that before each one and names the rank that
 * differs. In-place collectives need contiguous tensors; tensors on other
 * devices than the CPU travel through host memory.
 */
class Communicator {
 public:
  explicit Communicator(std::shared_ptr<detail::CommState> state);
  int rank() const;
  int size() const;
  /** Rank and number of ranks on this machine. */
  int local_rank() const;
  int local_size() const;

  void all_reduce(const Tensor& t, ReduceOp op = ReduceOp::sum,
                  Order order = Order::fast);
  Work all_reduce_async(const Tensor& t, ReduceOp op = ReduceOp::sum,
                        Order order = Order::fast);
  /** Overwrites `t` on every rank with root's `t`. */
  void broadcast(const Tensor& t, int root = 0);
  Work broadcast_async(const Tensor& t, int root = 0);
  /** Every rank's `t` stacked along dimension 0 in rank order: (N*d0, ...). */
  Tensor all_gather(const Tensor& t);
  Work all_gather_async(const Tensor& t);
  /** Reduces `t` (dimension 0 a multiple of N); rank k keeps block k. */
  Tensor reduce_scatter(const Tensor& t, ReduceOp op = ReduceOp::sum,
                        Order order = Order::fast);
  Work reduce_scatter_async(const Tensor& t, ReduceOp op = ReduceOp::sum,
                            Order order = Order::fast);
  void barrier();
  Work barrier_async();
  /**
   * Point to point; recv() fills `t`, whose size must be the sender's (a
   * DistError names both). `t` must stay unchanged until a send's Work ends.
   * recv_async matches its message when its Work is first tested or waited
   * on (it probes the size before receiving): two pending on the same
   * source and tag take the messages in the order they are completed.
   */
  void send(const Tensor& t, int dst, int tag = 0);
  void recv(const Tensor& t, int src, int tag = 0);
  Work send_async(const Tensor& t, int dst, int tag = 0);
  Work recv_async(const Tensor& t, int src, int tag = 0);
  /** Ranks with the same color form a group, ordered by (key, rank). */
  Communicator split(int color, int key = 0) const;

  const std::shared_ptr<detail::CommState>& state() const { return state_; }

 private:
  // `blocking`: MPI's blocking calls, whose tuned algorithms are 1.4-1.6x
  // faster here than the nonblocking ones (libnbc) the async twins need.
  Work start_all_reduce(const Tensor& t, ReduceOp op, Order order,
                        bool blocking);
  Work start_broadcast(const Tensor& t, int root, bool blocking);
  Work start_all_gather(const Tensor& t, bool blocking);
  Work start_reduce_scatter(const Tensor& t, ReduceOp op, Order order,
                            bool blocking);

  std::shared_ptr<detail::CommState> state_;
};

/**
 * Joins the job mpirun started (MPI_Init_thread, multiple). A process not
 * started by mpirun is a world of one rank and needs no MPI. Idempotent;
 * world() calls it.
 */
void init();
bool initialized();
Communicator& world();
/** cuda(local_rank % device_count()) when there are GPUs, else the CPU. */
Device local_device();
/** Overwrites each variable with root's value: identical replicas. */
void broadcast_variables(const std::vector<Variable>& variables, int root = 0);

}  // namespace tapeflow::dist
