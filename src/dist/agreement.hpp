#pragma once
// TAPEFLOW_DIST_DEBUG=1: before each collective the ranks compare what they
// are about to do (op, elements, dtype, its argument, shape) with one small
// allgather, so that a mismatch is a DistError naming the rank that differs
// instead of a hang or garbage.
#include <cstdint>
#include <span>

#include "dist/comm_state.hpp"
#include "tapeflow/core/shape.hpp"
#include "tapeflow/core/tensor.hpp"

namespace tapeflow::dist::detail {

/** `arg`: the root, or the reduce op and order; its meaning names it. */
void check_agreement(CommState& c, const char* op, const Shape& shape,
                     DType dtype, int64_t arg, const char* arg_name);

/** A hash of each tensor's dtype and shape, in order. */
uint64_t layout_hash(std::span<const Tensor> tensors);

/**
 * Always (not only under TAPEFLOW_DIST_DEBUG): the ranks of `comm` compare
 * `count` and `hash` of what each was given (DDP's parameters, a parameter
 * server's variables) with one allgather, and every rank throws the same
 * DistError naming the first rank that differs: parameters that differ
 * between ranks were broadcast into garbage or hung.
 */
void check_same_everywhere(MPI_Comm comm, const char* op, const char* what,
                           int64_t count, uint64_t hash);

}  // namespace tapeflow::dist::detail
