#pragma once
// The single-process reference a data-parallel job equals bit for bit.
#include <cstdint>
#include <functional>
#include <vector>

#include "tapeflow/core/tensor.hpp"
#include "tapeflow/dist/communicator.hpp"

namespace tapeflow::dist {

/**
 * Runs `micro_step(k)` for k = 0..n-1 in this process (it returns the
 * gradients of micro-batch k, the slice rank k would run) and combines the
 * n lists element by element exactly as the canonical all_reduce does: for
 * `mean`, ((g0 + g1) + ... + g(n-1)) * (1/n). An undefined gradient counts
 * as zeros; one undefined in every micro-batch stays undefined. Inside
 * micro_step, replica_index() is k.
 */
std::vector<Tensor> simulate(
    int n, const std::function<std::vector<Tensor>(int k)>& micro_step,
    ReduceOp op = ReduceOp::mean);

/** This process's rank in world(), or k inside simulate(n, ...). */
int replica_index();

/**
 * Seeds the global generator from (seed, step, replica_index()): dropout at
 * rank k draws what micro-batch k draws in simulate(). Call it at the start
 * of each step.
 */
void manual_seed_step(uint64_t seed, int64_t step);

}  // namespace tapeflow::dist
