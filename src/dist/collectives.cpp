// all_reduce, all_gather and reduce_scatter: MPI's own algorithms (`fast`)
// or the canonical order (alltoall, a left fold in rank order, allgather).
#include <cstring>
#include <memory>

#include "core/creation_internal.hpp"
#include "core/op_error.hpp"
#include "dist/agreement.hpp"
#include "dist/comm_state.hpp"
#include "dist/fold.hpp"
#include "dist/host_view.hpp"
#include "dist/nccl.hpp"
#include "dist/work.hpp"

namespace tapeflow::dist {
namespace {

using detail::CommState;
using detail::HostView;
using detail::WorkState;

MPI_Op mpi_op(ReduceOp op, DType dtype) {
  switch (op) {
    case ReduceOp::sum:
    case ReduceOp::mean:
      return dtype == DType::bool_ ? MPI_LOR : MPI_SUM;
    case ReduceOp::max:
      return MPI_MAX;
    case ReduceOp::min:
      break;
  }
  return MPI_MIN;
}

int64_t op_and_order(ReduceOp op, Order order) {
  return static_cast<int64_t>(op) * 2 + static_cast<int64_t>(order);
}

char* bytes(const Tensor& t) {
  return static_cast<char*>(t.raw_data());
}

/** Element ranges of the canonical all_reduce: rank k folds chunk k. */
struct Chunks {
  std::vector<int> counts, displs;
  Chunks(int64_t n, int ranks) : counts(ranks), displs(ranks) {
    for (int k = 0; k < ranks; ++k) {
      const int64_t begin = n * k / ranks, end = n * (k + 1) / ranks;
      counts[k] = static_cast<int>(end - begin);
      displs[k] = static_cast<int>(begin);
    }
  }
};

/**
 * acc = block 0 of `gathered`, then folded with blocks 1..N-1 in rank order:
 * the one place the canonical sum happens.
 */
void fold_blocks(const Tensor& gathered, char* acc, int64_t count, int ranks,
                 ReduceOp op) {
  const DType dt = gathered.dtype();
  const size_t block = static_cast<size_t>(count) * itemsize(dt);
  const char* src = bytes(gathered);
  if (ranks == 1) {
    if (block > 0) std::memcpy(acc, src, block);
    return;
  }
  detail::fold_pair(dt, op, acc, src, src + block, count);
  for (int r = 2; r < ranks; ++r)
    detail::fold_into(dt, op, acc, src + r * block, count);
}

void post_canonical_all_reduce(const std::shared_ptr<CommState>& cs,
                               WorkState& w, const Tensor& host, ReduceOp op) {
  const CommState& c = *cs;
  const DType dt = host.dtype();
  const MPI_Datatype type = detail::mpi_type(dt);
  auto chunks = std::make_shared<Chunks>(host.numel(), c.size);
  const int mine = chunks->counts[c.rank];
  const Tensor gathered =
      empty_tensor(Shape{int64_t{c.size} * mine}, dt, Device::cpu(), w.op);
  auto same = std::make_shared<Chunks>(int64_t{c.size} * mine, c.size);
  const auto* sc = chunks->counts.data();
  const auto* sd = chunks->displs.data();
  const auto* rc = same->counts.data();
  const auto* rd = same->displs.data();
  detail::check_mpi(
      w.blocking ? MPI_Alltoallv(bytes(host), sc, sd, type, bytes(gathered), rc,
                                 rd, type, c.comm)
                 : MPI_Ialltoallv(bytes(host), sc, sd, type, bytes(gathered),
                                  rc, rd, type, c.comm, w.request()),
      w.op);
  w.phases.push_back(
      [cs, chunks, same, gathered, host, op, type](WorkState& w) {
        const CommState& c = *cs;
        const int mine = chunks->counts[c.rank];
        char* acc = bytes(host) + static_cast<size_t>(chunks->displs[c.rank]) *
                                      itemsize(host.dtype());
        fold_blocks(gathered, acc, mine, c.size, op);
        detail::check_mpi(
            MPI_Iallgatherv(MPI_IN_PLACE, 0, type, bytes(host),
                            chunks->counts.data(), chunks->displs.data(), type,
                            c.comm, w.request()),
            w.op);
      });
}

/**
 * What all_reduce and reduce_scatter check before they start (after the
 * collective in flight is done); returns the element count.
 */
int64_t begin_reduction(CommState& c, const Tensor& t, ReduceOp op, Order order,
                        const char* op_name) {
  detail::check_defined(t, op_name);
  detail::check_reducible(t.dtype(), op, op_name);
  const int64_t n = t.numel();
  detail::mpi_count(n, op_name);
  detail::settle(c);
  detail::check_agreement(c, op_name, t.shape(), t.dtype(),
                          op_and_order(op, order), "reduce op and order");
  return n;
}

}  // namespace

Work Communicator::start_all_reduce(const Tensor& t, ReduceOp op, Order order,
                                    bool blocking) {
  constexpr const char* kOp = "all_reduce";
  CommState& c = *state_;
  const int64_t n = begin_reduction(c, t, op, order, kOp);
  detail::check_writable(t, kOp);  // NCCL's path too
  NoGradGuard no_grad;
  auto w = std::make_shared<WorkState>(kOp, ++c.seq, blocking);
  detail::track(c, w);
  w->result = t;
  if (detail::nccl_all_reduce(c, t, op, order)) return Work(std::move(w));
  const HostView v = detail::host_view(t, kOp, true);
  if (c.size > 1 && n > 0) {
    const MPI_Datatype type = detail::mpi_type(t.dtype());
    const int count = static_cast<int>(n);
    if (order == Order::fast)
      detail::check_mpi(
          blocking
              ? MPI_Allreduce(MPI_IN_PLACE, v.data(), count, type,
                              mpi_op(op, t.dtype()), c.comm)
              : MPI_Iallreduce(MPI_IN_PLACE, v.data(), count, type,
                               mpi_op(op, t.dtype()), c.comm, w->request()),
          kOp);
    else
      post_canonical_all_reduce(state_, *w, v.host, op);
  }
  w->phases.push_back([v, op, ranks = c.size](WorkState&) {
    detail::finish(v.host.dtype(), op, v.data(), v.host.numel(), ranks);
    detail::write_back(v, "all_reduce");
  });
  return Work(std::move(w));
}

Work Communicator::all_reduce_async(const Tensor& t, ReduceOp op, Order order) {
  return start_all_reduce(t, op, order, false);
}
void Communicator::all_reduce(const Tensor& t, ReduceOp op, Order order) {
  start_all_reduce(t, op, order, true).wait();
}

Work Communicator::start_all_gather(const Tensor& t, bool blocking) {
  constexpr const char* kOp = "all_gather";
  CommState& c = *state_;
  detail::check_defined(t, kOp);
  const int64_t n = t.numel();
  detail::mpi_count(n * c.size, kOp);
  detail::settle(c);
  detail::check_agreement(c, kOp, t.shape(), t.dtype(), 0, "argument");
  NoGradGuard no_grad;
  std::vector<int64_t> dims(t.shape().begin(), t.shape().end());
  if (dims.empty()) dims.push_back(1);
  dims[0] *= c.size;
  auto w = std::make_shared<WorkState>(kOp, ++c.seq, blocking);
  detail::track(c, w);
  Tensor on_device = empty_tensor(Shape(dims), t.dtype(), t.device(), kOp);
  if (detail::nccl_all_gather(c, t, on_device)) {
    w->result = on_device;
    return Work(std::move(w));
  }
  const HostView v = detail::host_view(t, kOp, false);
  const Tensor out = empty_tensor(Shape(dims), t.dtype(), Device::cpu(), kOp);
  if (c.size == 1) {
    if (n > 0) std::memcpy(bytes(out), v.data(), n * itemsize(t.dtype()));
  } else {
    const MPI_Datatype type = detail::mpi_type(t.dtype());
    const int count = static_cast<int>(n);
    detail::check_mpi(blocking
                          ? MPI_Allgather(v.data(), count, type, bytes(out),
                                          count, type, c.comm)
                          : MPI_Iallgather(v.data(), count, type, bytes(out),
                                           count, type, c.comm, w->request()),
                      kOp);
  }
  w->phases.push_back([v, out, device = t.device()](WorkState& w) {
    w.result = out.to(device);
  });
  return Work(std::move(w));
}

Work Communicator::all_gather_async(const Tensor& t) {
  return start_all_gather(t, false);
}
Tensor Communicator::all_gather(const Tensor& t) {
  return start_all_gather(t, true).result();
}

Work Communicator::start_reduce_scatter(const Tensor& t, ReduceOp op,
                                        Order order, bool blocking) {
  constexpr const char* kOp = "reduce_scatter";
  CommState& c = *state_;
  if (t.defined() && (t.rank() == 0 || t.dim(0) % c.size != 0))
    throw op_error<ShapeError>(kOp, "expected dimension 0 to be a multiple of ",
                               c.size, " (the ranks), got shape ",
                               t.shape().str());
  const int64_t n = begin_reduction(c, t, op, order, kOp);
  NoGradGuard no_grad;
  const HostView v = detail::host_view(t, kOp, false);
  std::vector<int64_t> dims(t.shape().begin(), t.shape().end());
  dims[0] /= c.size;
  const Tensor out = empty_tensor(Shape(dims), t.dtype(), Device::cpu(), kOp);
  const int64_t block = n / c.size;
  const int count = static_cast<int>(block);
  const DType dt = t.dtype();
  const MPI_Datatype type = detail::mpi_type(dt);
  auto w = std::make_shared<WorkState>(kOp, ++c.seq, blocking);
  detail::track(c, w);
  if (c.size == 1 || block == 0) {
    if (block > 0) std::memcpy(bytes(out), v.data(), block * itemsize(dt));
  } else if (order == Order::fast) {
    const MPI_Op mop = mpi_op(op, dt);
    detail::check_mpi(
        blocking ? MPI_Reduce_scatter_block(v.data(), bytes(out), count, type,
                                            mop, c.comm)
                 : MPI_Ireduce_scatter_block(v.data(), bytes(out), count, type,
                                             mop, c.comm, w->request()),
        kOp);
  } else {
    const Tensor gathered = empty_tensor(Shape{n}, dt, Device::cpu(), kOp);
    detail::check_mpi(
        blocking ? MPI_Alltoall(v.data(), count, type, bytes(gathered), count,
                                type, c.comm)
                 : MPI_Ialltoall(v.data(), count, type, bytes(gathered), count,
                                 type, c.comm, w->request()),
        kOp);
    w->phases.push_back([gathered, out, block, op, ranks = c.size](WorkState&) {
      fold_blocks(gathered, bytes(out), block, ranks, op);
    });
  }
  w->phases.push_back(
      [v, out, block, op, ranks = c.size, device = t.device()](WorkState& w) {
        detail::finish(out.dtype(), op, bytes(out), block, ranks);
        w.result = out.to(device);
      });
  return Work(std::move(w));
}

Tensor Communicator::reduce_scatter(const Tensor& t, ReduceOp op, Order order) {
  return start_reduce_scatter(t, op, order, true).result();
}
Work Communicator::reduce_scatter_async(const Tensor& t, ReduceOp op,
                                        Order order) {
  return start_reduce_scatter(t, op, order, false);
}

}  // namespace tapeflow::dist
