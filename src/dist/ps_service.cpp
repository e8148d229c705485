// The ps task's loop. Async: pushes applied on arrival (or dropped when too
// stale), pulls answered at once or held while the worker is too far ahead
// (stale synchronous parallel). Sync: the first replicas_to_aggregate
// gradients of the global step are averaged in worker order and applied,
// later ones dropped, and pulls wait for the step they ask for. A ps that
// hears from no worker for TAPEFLOW_DIST_TIMEOUT ends the job, naming the
// worker silent the longest.
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <string>

#include "core/creation_internal.hpp"
#include "core/op_error.hpp"
#include "dist/comm_state.hpp"
#include "dist/ps_state.hpp"
#include "dist/watchdog.hpp"
#include "tapeflow/ops/math.hpp"

namespace tapeflow::dist::detail {
namespace {

using Clock = std::chrono::steady_clock;

struct Workers {
  std::vector<int64_t> clock;           // pushes received
  std::vector<int64_t> pulled_version;  // updates applied at its last pull
  std::vector<Clock::time_point> heard;
  std::vector<char> done;
  std::vector<std::pair<int, int64_t>> waiting;  // held pulls: worker, step
  std::vector<std::vector<Tensor>> accepted;     // sync: this step's pushes
  int remaining, accepted_count = 0;

  explicit Workers(int n)
      : clock(n, 0),
        pulled_version(n, 0),
        heard(n, Clock::now()),
        done(n, 0),
        accepted(n),
        remaining(n) {}
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

int64_t read_step(const std::vector<char>& msg, int w, const char* op) {
  int64_t step = 0;
  if (msg.size() < sizeof step)
    throw op_error<DistError>(op, "expected a step in the message of worker ",
                              w, ", got ", msg.size(), " bytes");
  std::memcpy(&step, msg.data(), sizeof step);
  return step;
}

void reply(PsState& s, Workers& ws, int w) {
  std::vector<char> header(sizeof s.global_step);
  std::memcpy(header.data(), &s.global_step, sizeof s.global_step);
  send_parts(header, std::vector<Tensor>(s.shard.begin(), s.shard.end()),
             s.worker_rank(w), kValues, s.comm, "pull");
  ws.pulled_version[w] = s.stats.applied;
}

bool may_pull(const PsState& s, const Workers& ws, int w, int64_t step) {
  return s.global_step >= step &&
         (s.options.staleness_bound < 0 ||
          ws.clock[w] - ws.slowest() <= s.options.staleness_bound);
}

/** Answers held pulls that the others' progress now allows. */
void release_waiting(PsState& s, Workers& ws) {
  std::vector<std::pair<int, int64_t>> still;
  for (const auto& [w, step] : ws.waiting) {
    if (may_pull(s, ws, w, step))
      reply(s, ws, w);
    else
      still.emplace_back(w, step);
  }
  ws.waiting = std::move(still);
}

/** [step][flag per variable][the flagged gradients' bytes] -> tensors. */
std::vector<Tensor> read_grads(const PsState& s, const std::vector<char>& msg,
                               int w) {
  const size_t n = s.shard.size();
  size_t at = sizeof(int64_t) + n;
  if (msg.size() < at)
    throw op_error<DistError>("push", "expected at least ", at,
                              " bytes from worker ", w, ", got ", msg.size());
  std::vector<Tensor> grads(n);
  for (size_t i = 0; i < n; ++i) {
    if (!msg[sizeof(int64_t) + i]) continue;
    const Variable& v = s.shard[i];
    const size_t bytes = size_t(v.numel()) * itemsize(v.dtype());
    if (at + bytes > msg.size())
      throw op_error<DistError>("push", "expected ", at + bytes,
                                " bytes from worker ", w, ", got ", msg.size());
    grads[i] = empty_tensor(v.shape(), v.dtype(), Device::cpu(), "push");
    if (bytes > 0) std::memcpy(grads[i].raw_data(), msg.data() + at, bytes);
    at += bytes;
  }
  if (at != msg.size())
    throw op_error<DistError>("push", "expected ", at, " bytes from worker ", w,
                              ", got ", msg.size());
  return grads;
}

/** Sync: the mean of this step's accepted gradients, in worker order. */
void apply_step(PsState& s, Workers& ws) {
  NoGradGuard no_grad;
  std::vector<Tensor> mean(s.shard.size());
  for (size_t i = 0; i < mean.size(); ++i) {
    int count = 0;
    for (const auto& grads : ws.accepted) {
      if (grads.empty() || !grads[i].defined()) continue;
      mean[i] = count++ == 0 ? grads[i] : add(mean[i], grads[i]);
    }
    if (count > 1) mean[i] = mean[i] * (1.0 / count);
  }
  s.optimizer->apply_gradients(mean, s.shard);
  for (auto& grads : ws.accepted) grads.clear();
  ws.accepted_count = 0;
  ++s.global_step;
  ++s.stats.applied;
}

/**
 * Sync: a step ends at replicas_to_aggregate gradients, or with those that
 * came once fewer workers than that remain (the end of training: workers
 * that are done push no more).
 */
void finish_step_if_ready(PsState& s, Workers& ws) {
  const int needed = std::min(s.options.replicas_to_aggregate, ws.remaining);
  if (ws.accepted_count > 0 && ws.accepted_count >= needed) apply_step(s, ws);
}

void on_push(PsState& s, Workers& ws, int w, const std::vector<char>& msg) {
  step_completed();  // a worker finished a step: the steady timeout applies
  const int64_t step = read_step(msg, w, "push");
  std::vector<Tensor> grads = read_grads(s, msg, w);
  ++ws.clock[w];
  s.stats.max_clock_gap =
      std::max(s.stats.max_clock_gap, ws.fastest() - ws.slowest());
  if (s.sync()) {
    if (step != s.global_step || !ws.accepted[w].empty()) {
      ++s.stats.dropped;  // a backup's, or computed on older values
      return;
    }
    ws.accepted[w] = std::move(grads);
    ++ws.accepted_count;
    finish_step_if_ready(s, ws);
    return;
  }
  const int64_t staleness = s.stats.applied - ws.pulled_version[w];
  if (s.options.drop_stale_after >= 0 &&
      staleness > s.options.drop_stale_after) {
    ++s.stats.dropped;
    return;
  }
  s.optimizer->apply_gradients(grads, s.shard);
  ++s.stats.applied;
  ++s.global_step;
}

/** Nothing from any worker for the timeout: name the quietest one. */
void check_silence(const PsState& s, const Workers& ws) {
  const auto now = Clock::now();
  int quietest = -1;
  Clock::time_point latest{};
  for (int w = 0; w < int(ws.done.size()); ++w) {
    if (ws.done[w]) continue;
    latest = std::max(latest, ws.heard[w]);
    if (quietest < 0 || ws.heard[w] < ws.heard[quietest]) quietest = w;
  }
  const double limit = current_timeout();
  if (quietest < 0 ||
      std::chrono::duration<double>(now - latest).count() < limit)
    return;
  const double silent =
      std::chrono::duration<double>(now - ws.heard[quietest]).count();
  end_job("[ps " + std::to_string(s.server->task.task_index) + "] worker " +
          std::to_string(quietest) + " silent for " +
          std::to_string(static_cast<int>(silent)) + " s (" +
          std::to_string(ws.clock[quietest]) + " pushes)");
}

}  // namespace

void serve(PsState& s) {
  Workers ws(s.num_workers);
  // MPI polls: an idle ps would burn a core in a blocking probe, so it
  // probes without blocking, and once nothing came for 1 ms it sleeps
  // between probes, 50 us doubling up to 1 ms (idle: 0.34 s of CPU per 2 s
  // at a flat 50 us). While requests flow it keeps probing: a sleep per
  // request made a 4 KiB round trip with one worker 20x slower.
  long pause_ns = 50'000;
  auto last_message = Clock::now();
  std::vector<char> msg;
  while (ws.remaining > 0) {
    int flag = 0;
    MPI_Status status;
    check_mpi(MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, s.comm, &flag, &status),
              "join");
    if (!flag) {
      check_silence(s, ws);
      if (Clock::now() - last_message > std::chrono::milliseconds(1)) {
        const timespec pause{0, pause_ns};
        nanosleep(&pause, nullptr);
        pause_ns = std::min(2 * pause_ns, 1'000'000L);
      }
      continue;
    }
    last_message = Clock::now();
    pause_ns = 50'000;
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
    ws.heard[w] = Clock::now();
    switch (status.MPI_TAG) {
      case kPull:
        ws.waiting.emplace_back(w, read_step(msg, w, "pull"));
        break;
      case kPush:
        on_push(s, ws, w, msg);
        break;
      case kSave: {
        save_shard(s, read_step(msg, w, "save"));
        check_mpi(MPI_Send(&s.global_step, 1, MPI_INT64_T, status.MPI_SOURCE,
                           kSaved, s.comm),
                  "save");
        break;
      }
      case kDone:
        ws.done[w] = 1;
        --ws.remaining;
        if (s.sync()) finish_step_if_ready(s, ws);
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
