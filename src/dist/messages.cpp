// The Communicator's other operations: broadcast, barrier, point to point,
// split, and broadcast_variables.
#include <vector>

#include "core/op_error.hpp"
#include "dist/agreement.hpp"
#include "dist/comm_state.hpp"
#include "dist/host_view.hpp"
#include "dist/nccl.hpp"
#include "dist/work.hpp"

namespace tapeflow::dist {

using detail::CommState;
using detail::HostView;
using detail::WorkState;

Communicator::Communicator(std::shared_ptr<CommState> state)
    : state_(std::move(state)) {}
int Communicator::rank() const {
  return state_->rank;
}
int Communicator::size() const {
  return state_->size;
}
int Communicator::local_rank() const {
  return state_->local_rank;
}
int Communicator::local_size() const {
  return state_->local_size;
}

Work Communicator::start_broadcast(const Tensor& t, int root, bool blocking) {
  constexpr const char* kOp = "broadcast";
  CommState& c = *state_;
  detail::check_defined(t, kOp);
  detail::check_peer(root, c.size, c.rank, false, kOp, "root");
  const int64_t n = t.numel();
  detail::mpi_count(n, kOp);
  detail::settle(c);
  detail::check_agreement(c, kOp, t.shape(), t.dtype(), root, "root");
  // On every rank, the root too: one that went on alone would wait for ever.
  detail::check_writable(t, kOp);
  NoGradGuard no_grad;
  const bool receives = c.rank != root;
  auto w = std::make_shared<WorkState>(kOp, ++c.seq, blocking);
  detail::track(c, w);
  w->result = t;
  if (detail::nccl_broadcast(c, t, root)) return Work(std::move(w));
  const HostView v = detail::host_view(t, kOp, receives);
  const MPI_Datatype type = detail::mpi_type(t.dtype());
  const int count = static_cast<int>(n);
  if (c.size > 1 && n > 0)
    detail::check_mpi(blocking ? MPI_Bcast(v.data(), count, type, root, c.comm)
                               : MPI_Ibcast(v.data(), count, type, root, c.comm,
                                            w->request()),
                      kOp);
  w->phases.push_back([v, receives](WorkState&) {
    if (receives) detail::write_back(v, "broadcast");
  });
  return Work(std::move(w));
}

Work Communicator::broadcast_async(const Tensor& t, int root) {
  return start_broadcast(t, root, false);
}
void Communicator::broadcast(const Tensor& t, int root) {
  start_broadcast(t, root, true).wait();
}

void Communicator::barrier() {
  CommState& c = *state_;
  detail::settle(c);
  detail::InFlight flight("barrier", ++c.seq);
  if (c.size > 1) detail::check_mpi(MPI_Barrier(c.comm), "barrier");
}

Work Communicator::barrier_async() {
  CommState& c = *state_;
  detail::settle(c);
  auto w = std::make_shared<WorkState>("barrier", ++c.seq, false);
  detail::track(c, w);
  if (c.size > 1)
    detail::check_mpi(MPI_Ibarrier(c.comm, w->request()), "barrier");
  return Work(std::move(w));
}

namespace {

/** A message's checks, and its element count as MPI takes it. */
int message_count(const CommState& c, const Tensor& t, int peer, const char* op,
                  const char* role) {
  detail::check_defined(t, op);
  detail::check_peer(peer, c.size, c.rank, true, op, role);
  return detail::mpi_count(t.numel(), op);
}

}  // namespace

void Communicator::send(const Tensor& t, int dst, int tag) {
  send_async(t, dst, tag).wait();
}

Work Communicator::send_async(const Tensor& t, int dst, int tag) {
  constexpr const char* kOp = "send";
  CommState& c = *state_;
  const int n = message_count(c, t, dst, kOp, "destination");
  NoGradGuard no_grad;
  const HostView v = detail::host_view(t, kOp, false);
  auto w = std::make_shared<WorkState>(kOp, ++c.seq, false);
  w->result = t;
  detail::check_mpi(MPI_Isend(v.data(), n, detail::mpi_type(t.dtype()), dst,
                              tag, c.comm, w->request()),
                    kOp);
  w->phases.push_back([v](WorkState&) {});  // keeps the buffer until done
  return Work(std::move(w));
}

namespace {

DistError size_mismatch(const Tensor& t, int src, int tag, int64_t bytes) {
  const int64_t expected =
      t.numel() * static_cast<int64_t>(itemsize(t.dtype()));
  return op_error<DistError>("recv", "expected ", expected, " bytes (",
                             t.numel(), " ", dtype_name(t.dtype()),
                             ") from rank ", src, " (tag ", tag, "), got ",
                             bytes);
}

}  // namespace

void Communicator::recv(const Tensor& t, int src, int tag) {
  constexpr const char* kOp = "recv";
  CommState& c = *state_;
  const int n = message_count(c, t, src, kOp, "source");
  const MPI_Datatype type = detail::mpi_type(t.dtype());
  NoGradGuard no_grad;
  detail::InFlight flight(kOp, ++c.seq);
  MPI_Message message;
  MPI_Status status;
  detail::check_mpi(MPI_Mprobe(src, tag, c.comm, &message, &status), kOp);
  int bytes = 0;
  MPI_Get_count(&status, MPI_BYTE, &bytes);
  const bool fits =
      bytes == int64_t{n} * static_cast<int64_t>(itemsize(t.dtype()));
  if (!fits || !detail::writable(t)) {
    // Received all the same, so that the sender's send completes.
    std::vector<char> drained(static_cast<size_t>(bytes));
    MPI_Mrecv(drained.data(), bytes, MPI_BYTE, &message, MPI_STATUS_IGNORE);
    if (!fits) throw size_mismatch(t, src, tag, bytes);
    detail::check_writable(t, kOp);
  }
  const HostView v = detail::host_view(t, kOp, true);
  detail::check_mpi(MPI_Mrecv(v.data(), n, type, &message, MPI_STATUS_IGNORE),
                    kOp);
  detail::write_back(v, kOp);
}

namespace {

/**
 * recv_async's first phase: match the message (MPI_Improbe from test(),
 * MPI_Mprobe from wait()), then receive it only if it fits, as recv does.
 * MPI's truncation error was no guard: with Open MPI 4.1 an MPI_Irecv
 * shorter than a message that arrived after an earlier one on the pair
 * never completed.
 */
struct ProbedRecv {
  HostView view;
  int src, tag, count;
  MPI_Comm comm;

  void operator()(WorkState& w) const {
    constexpr const char* kOp = "recv";
    MPI_Message message;
    MPI_Status status;
    int found = 1;
    if (w.may_block)
      detail::check_mpi(MPI_Mprobe(src, tag, comm, &message, &status), kOp);
    else
      detail::check_mpi(MPI_Improbe(src, tag, comm, &found, &message, &status),
                        kOp);
    if (!found) {
      w.phases.push_front(*this);
      w.not_ready = true;
      return;
    }
    int bytes = 0;
    MPI_Get_count(&status, MPI_BYTE, &bytes);
    const Tensor& t = view.host;
    if (bytes != t.numel() * static_cast<int64_t>(itemsize(t.dtype()))) {
      // Received all the same, so that the sender's send completes.
      std::vector<char> drained(static_cast<size_t>(bytes));
      MPI_Mrecv(drained.data(), bytes, MPI_BYTE, &message, MPI_STATUS_IGNORE);
      throw size_mismatch(t, src, tag, bytes);
    }
    detail::check_mpi(
        MPI_Imrecv(view.data(), count, detail::mpi_type(t.dtype()), &message,
                   w.request()),
        kOp);
    w.phases.push_front(
        [v = view](WorkState&) { detail::write_back(v, "recv"); });
  }
};

}  // namespace

Work Communicator::recv_async(const Tensor& t, int src, int tag) {
  constexpr const char* kOp = "recv";
  CommState& c = *state_;
  const int n = message_count(c, t, src, kOp, "source");
  NoGradGuard no_grad;
  const HostView v = detail::host_view(t, kOp, true);
  auto w = std::make_shared<WorkState>(kOp, ++c.seq, false);
  w->result = t;
  w->phases.push_back(ProbedRecv{v, src, tag, n, c.comm});
  return Work(std::move(w));
}

Communicator Communicator::split(int color, int key) const {
  constexpr const char* kOp = "split";
  if (color < 0)
    throw op_error<ValueError>(kOp, "expected a color >= 0, got ", color);
  auto out = std::make_shared<CommState>();
  if (state_->comm != MPI_COMM_NULL) {
    detail::settle(*state_);
    detail::InFlight flight(kOp, ++state_->seq);
    detail::check_mpi(MPI_Comm_split(state_->comm, color, key, &out->comm),
                      kOp);
    out->owned = true;
    detail::describe(*out);
  }
  return Communicator(std::move(out));
}

void broadcast_variables(const std::vector<Variable>& variables, int root) {
  Communicator& w = world();
  std::vector<Work> pending;
  pending.reserve(variables.size());
  for (const Variable& v : variables)
    pending.push_back(w.broadcast_async(v, root));
  for (Work& p : pending) p.wait();
}

}  // namespace tapeflow::dist
