#pragma once
// Synchronous data parallelism (PyTorch's DistributedDataParallel): every
// rank holds the whole model, runs its slice of each global batch, and gets
// the gradients averaged over the ranks. See docs/distributed.md.
#include <cstdint>
#include <memory>
#include <vector>

#include "tapeflow/autograd.hpp"
#include "tapeflow/dist/communicator.hpp"

namespace tapeflow::dist {

/** Whether buckets are reduced while the backward walk goes on. */
enum class Overlap {
  /** On where it pays: a job across machines, or parameters on a GPU. On one
   * machine's CPU cores the reduction competes with backward for them. */
  automatic,
  on,
  off,
};

struct DataParallelOptions {
  double bucket_cap_mb = 25;   // PyTorch DDP's defaults
  double first_bucket_mb = 1;  // small, so the first reduce starts early
  Order order = Order::canonical;
  Overlap overlap = Overlap::automatic;
};

/**
 * Constructing it broadcasts rank 0's parameters to every rank. gradient()
 * then differentiates the local loss and returns each parameter's gradient
 * averaged over the ranks, ((g0 + g1) + ... + g(N-1)) * (1/N) in canonical
 * order. Gradients are packed into buckets in the order the tape finalizes
 * them (learned on the first step, rank 0's order used by all), and a full
 * bucket starts its reduction at once. A gradient of first_bucket_mb or more
 * is a bucket of its own, reduced in place without a copy. A parameter no rank
 * used has an undefined gradient, as in one process; one some ranks used gets
 * zeros from the others.
 */
class DistributedDataParallel {
 public:
  explicit DistributedDataParallel(std::vector<Variable> parameters,
                                   DataParallelOptions options = {});
  DistributedDataParallel(std::vector<Variable> parameters,
                          DataParallelOptions options, Communicator comm);
  ~DistributedDataParallel();
  DistributedDataParallel(const DistributedDataParallel&) = delete;
  DistributedDataParallel& operator=(const DistributedDataParallel&) = delete;

  std::vector<Tensor> gradient(GradientTape& tape, const Tensor& loss);
  /** The same, for the parameters given at construction (checked). */
  std::vector<Tensor> gradient(GradientTape& tape, const Tensor& loss,
                               const std::vector<Variable>& parameters);
  /**
   * Averages state that is not trained (batch norm's moving statistics)
   * over the ranks in canonical order; call it at the end of a step.
   */
  void average_buffers(const std::vector<Variable>& buffers);
  /** ReplicaDivergenceError unless every rank holds rank 0's parameters. */
  void check_replicas();

  /** Parameter indices per bucket, in reduction order (after step 1). */
  const std::vector<std::vector<size_t>>& buckets() const;
  bool overlaps() const;
  int64_t steps() const;

 private:
  struct State;
  std::unique_ptr<State> s_;
};

}  // namespace tapeflow::dist
