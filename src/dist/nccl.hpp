#pragma once
// Collectives on CUDA tensors through NCCL (libtapeflow_dist_nccl.so, loaded
// on first use). Each returns false when NCCL is not there for this
// communicator (no library, no MPI, a CPU tensor, a strided one): the caller
// then goes through host buffers. Every rank takes the same path: whether
// NCCL is usable is agreed on once, by all ranks.
#include "dist/comm_state.hpp"
#include "tapeflow/core/tensor.hpp"

namespace tapeflow::dist::detail {

bool nccl_all_reduce(CommState& c, const Tensor& t, ReduceOp op, Order order);
bool nccl_broadcast(CommState& c, const Tensor& t, int root);
/** Fills `out` (N times t's elements, on t's device). */
bool nccl_all_gather(CommState& c, const Tensor& t, Tensor& out);

}  // namespace tapeflow::dist::detail
