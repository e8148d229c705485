#pragma once
// Where a parameter server's variables live (ParameterClient::create).
#include <cstdint>
#include <vector>

#include "dist/ps_state.hpp"
#include "tapeflow/dist/parameter_server.hpp"

namespace tapeflow::dist::detail {

/** Variables as pieces: whole, or split along dimension 0 when large. */
std::vector<Piece> cut(const NamedVariables& vars, int num_ps,
                       const Placement& p);

/**
 * The ps task of each piece: PsScope's choices first, then the placement's
 * (round robin, or the least loaded task by bytes, largest pieces first).
 */
std::vector<int> place(const NamedVariables& vars,
                       const std::vector<Piece>& pieces, int num_ps,
                       const Placement& p);

/**
 * What a task was given to create: names, dtypes, shapes and where each
 * piece lives. A worker with another list sent bytes the ps read as other
 * variables' gradients.
 */
uint64_t layout_of(const NamedVariables& vars, const std::vector<Piece>& pieces,
                   const std::vector<int>& owner);

}  // namespace tapeflow::dist::detail
