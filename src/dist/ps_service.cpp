// The ps task's loop: pulls answered with the latest values (or held back
// while the worker is too far ahead: stale synchronous parallel), pushes
// applied by the task's optimizer on arrival (or dropped as too stale).
#include <time.h>

#include <algorithm>
#include <cstring>

#include "core/creation_internal.hpp"
#include "core/op_error.hpp"
#include "dist/comm_state.hpp"
#include "dist/ps_state.hpp"

namespace tapeflow::dist::detail {
namespace {

struct Workers {
  std::vector<int64_t> clock;           // pushes received
  std::vector<int64_t> pulled_version;  // stats.applied at its last pull
  std::vector<char> done;
  std::vector<int> waiting;  // pulls held back, by worker
  int remaining;

  explicit Workers(int n)
      : clock(n, 0), pulled_version(n, 0), done(n, 0), remaining(n) {}
  int64_t slowest() const {
    int64_t m = INT64_MAX;
    for (size_t w = 0; w < clock.size(); ++w)
      if (!done[w]) m = std::min(m, clock[w]);
    return m;
  }
  int64_t fastest() const {
    int64_t m = 0;
    for (size_t w = 0; w < clock.size(); ++w)
      if (!done[w]) m = std::max(m, clock[w]);
    return m;
  }
};

void reply(PsState& s, Workers& ws, int w) {
  const std::vector<char> bytes =
      pack(std::vector<Tensor>(s.shard.begin(), s.shard.end()));
  check_mpi(MPI_Send(bytes.data(), mpi_count(int64_t(bytes.size()), "pull"),
                     MPI_BYTE, s.worker_rank(w), kValues, s.comm),
            "pull");
  ws.pulled_version[w] = s.stats.applied;
}

bool may_pull(const PsState& s, const Workers& ws, int w) {
  return s.options.staleness_bound < 0 ||
         ws.clock[w] - ws.slowest() <= s.options.staleness_bound;
}

/** Answers held-back pulls that the slowest worker's progress allows. */
void release_waiting(PsState& s, Workers& ws) {
  std::vector<int> still;
  for (int w : ws.waiting) {
    if (may_pull(s, ws, w))
      reply(s, ws, w);
    else
      still.push_back(w);
  }
  ws.waiting = std::move(still);
}

/** [flag per variable][bytes of the flagged gradients] -> apply or drop. */
void apply_push(PsState& s, Workers& ws, int w, const std::vector<char>& msg) {
  const size_t n = s.shard.size();
  if (msg.size() < n)
    throw op_error<DistError>("push", "expected at least ", n,
                              " bytes from worker ", w, ", got ", msg.size());
  std::vector<Tensor> grads(n);
  size_t at = n;
  for (size_t i = 0; i < n; ++i) {
    if (!msg[i]) continue;
    const Variable& v = s.shard[i];
    const size_t bytes = size_t(v.numel()) * itemsize(v.dtype());
    if (at + bytes > msg.size())
      throw op_error<DistError>("push", "expected ", at + bytes,
                                " bytes from worker ", w, ", got ", msg.size());
    grads[i] = empty_tensor(v.shape(), v.dtype(), Device::cpu(), "push");
    if (bytes > 0) std::memcpy(grads[i].raw_data(), msg.data() + at, bytes);
    at += bytes;
  }
  ++ws.clock[w];
  const int64_t staleness = s.stats.applied - ws.pulled_version[w];
  if (s.options.drop_stale_after >= 0 &&
      staleness > s.options.drop_stale_after) {
    ++s.stats.dropped;
  } else {
    s.optimizer->apply_gradients(grads, s.shard);
    ++s.stats.applied;
  }
  s.stats.max_clock_gap =
      std::max(s.stats.max_clock_gap, ws.fastest() - ws.slowest());
}

}  // namespace

void serve(PsState& s) {
  Workers ws(s.num_workers);
  // MPI polls: an idle ps would burn a core in a blocking probe, so it
  // probes without blocking and sleeps 50 us between empty probes.
  const timespec pause{0, 50'000};
  std::vector<char> msg;
  while (ws.remaining > 0) {
    int flag = 0;
    MPI_Status status;
    check_mpi(MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, s.comm, &flag, &status),
              "join");
    if (!flag) {
      nanosleep(&pause, nullptr);
      continue;
    }
    int bytes = 0;
    MPI_Get_count(&status, MPI_BYTE, &bytes);
    msg.resize(static_cast<size_t>(bytes));
    check_mpi(MPI_Recv(msg.data(), bytes, MPI_BYTE, status.MPI_SOURCE,
                       status.MPI_TAG, s.comm, MPI_STATUS_IGNORE),
              "join");
    const int w = status.MPI_SOURCE - s.num_ps;
    if (w < 0 || w >= s.num_workers)
      throw op_error<DistError>("join",
                                "expected requests from workers "
                                "(ranks ",
                                s.num_ps, " to ", s.num_ps + s.num_workers - 1,
                                "), got rank ", status.MPI_SOURCE);
    switch (status.MPI_TAG) {
      case kPull:
        if (may_pull(s, ws, w))
          reply(s, ws, w);
        else
          ws.waiting.push_back(w);
        break;
      case kPush:
        apply_push(s, ws, w, msg);
        break;
      case kDone:
        ws.done[w] = 1;
        --ws.remaining;
        break;
      default:
        throw op_error<DistError>("join",
                                  "expected a pull, push or done "
                                  "from worker ",
                                  w, ", got tag ", status.MPI_TAG);
    }
    release_waiting(s, ws);
  }
}

}  // namespace tapeflow::dist::detail
