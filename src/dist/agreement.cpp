#include "dist/agreement.hpp"

#include <string_view>
#include <vector>

#include "core/op_error.hpp"
#include "dist/watchdog.hpp"

namespace tapeflow::dist::detail {

void check_agreement(CommState& c, const char* op, int64_t numel, DType dtype,
                     int64_t arg, const char* arg_name) {
  if (!debug_checks() || c.size == 1) return;
  const auto op_id =
      static_cast<int64_t>(std::hash<std::string_view>{}(op) >> 1);
  const int64_t mine[4] = {op_id, numel, static_cast<int64_t>(dtype), arg};
  std::vector<int64_t> all(4 * static_cast<size_t>(c.size));
  InFlight flight(op, c.seq);
  check_mpi(
      MPI_Allgather(mine, 4, MPI_INT64_T, all.data(), 4, MPI_INT64_T, c.comm),
      op);
  for (int r = 1; r < c.size; ++r) {
    const int64_t* theirs = &all[4 * static_cast<size_t>(r)];
    if (theirs[0] != all[0])
      throw op_error<DistError>(op,
                                "expected every rank in the same "
                                "collective (seq ",
                                c.seq, "), rank ", r, " is in another one");
    if (theirs[1] != all[1])
      throw op_error<DistError>(op, "expected ", all[1],
                                " elements on every rank, rank ", r, " has ",
                                theirs[1]);
    if (theirs[2] != all[2])
      throw op_error<DistError>(op, "expected dtype ",
                                dtype_name(static_cast<DType>(all[2])),
                                " on every rank, rank ", r, " has ",
                                dtype_name(static_cast<DType>(theirs[2])));
    if (theirs[3] != all[3])
      throw op_error<DistError>(op, "expected ", arg_name, " ", all[3],
                                " on every rank, rank ", r, " has ", theirs[3]);
  }
}

}  // namespace tapeflow::dist::detail
