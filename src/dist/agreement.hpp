#pragma once
// TAPEFLOW_DIST_DEBUG=1: before each collective the ranks compare what they
// are about to do (op, elements, dtype, its argument, shape) with one small
// allgather, so that a mismatch is a DistError naming the rank that differs
// instead of a hang or garbage.
#include <cstdint>

#include "dist/comm_state.hpp"
#include "tapeflow/core/shape.hpp"

namespace tapeflow::dist::detail {

/** `arg`: the root, or the reduce op and order; its meaning names it. */
void check_agreement(CommState& c, const char* op, const Shape& shape,
                     DType dtype, int64_t arg, const char* arg_name);

}  // namespace tapeflow::dist::detail
