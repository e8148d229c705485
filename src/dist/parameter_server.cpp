#include "tapeflow/dist/parameter_server.hpp"

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/creation_internal.hpp"
#include "core/op_error.hpp"
#include "dist/agreement.hpp"
#include "dist/comm_state.hpp"
#include "dist/ps_placement.hpp"
#include "dist/ps_state.hpp"
#include "dist/watchdog.hpp"
#include "io/atomic_write.hpp"
#include "tapeflow/ops/shape.hpp"

namespace tapeflow::dist {
namespace detail {

PsState::~PsState() {
  int finalized = 1;
  MPI_Finalized(&finalized);
  if (comm != MPI_COMM_NULL && !finalized) MPI_Comm_free(&comm);
}

Tensor PsState::piece_of(const Tensor& t, size_t p) const {
  const Piece& piece = pieces[p];
  if (piece.whole) return t;
  std::vector<int64_t> begin(size_t(t.rank()), 0), size(size_t(t.rank()), -1);
  begin[0] = piece.begin;
  size[0] = piece.rows;
  return slice(t, begin, size);
}

std::vector<size_t> PsState::owned_by(int k) const {
  std::vector<size_t> out;
  for (size_t i = 0; i < owner.size(); ++i)
    if (owner[i] == k) out.push_back(i);
  return out;
}

void send_parts(const std::vector<char>& header,
                const std::vector<Tensor>& parts, int dest, int tag,
                MPI_Comm comm, const char* op) {
  std::vector<Tensor> host;  // alive until MPI_Send returns
  std::vector<int> lengths;
  std::vector<MPI_Aint> addresses;
  const auto add = [&](const void* p, size_t bytes) {
    if (bytes == 0) return;
    MPI_Aint address;
    MPI_Get_address(p, &address);
    lengths.push_back(mpi_count(int64_t(bytes), op));
    addresses.push_back(address);
  };
  add(header.data(), header.size());
  for (const Tensor& t : parts) {
    host.push_back(materialize(t.to(Device::cpu())));
    add(host.back().raw_data(), size_t(t.numel()) * itemsize(t.dtype()));
  }
  MPI_Datatype type;
  check_mpi(MPI_Type_create_hindexed(int(lengths.size()), lengths.data(),
                                     addresses.data(), MPI_BYTE, &type),
            op);
  check_mpi(MPI_Type_commit(&type), op);
  const int rc =
      MPI_Send(MPI_BOTTOM, lengths.empty() ? 0 : 1, type, dest, tag, comm);
  MPI_Type_free(&type);
  check_mpi(rc, op);
}

void unpack_into(const char* data, size_t size, const std::vector<Tensor>& into,
                 const char* op) {
  NoGradGuard no_grad;
  size_t at = 0;
  for (const Tensor& v : into) {
    const size_t n = size_t(v.numel()) * itemsize(v.dtype());
    if (at + n > size)
      throw op_error<DistError>(op, "expected ", at + n,
                                " bytes of values, got ", size);
    if (v.device() == Device::cpu() && v.is_contiguous()) {
      const Tensor target = begin_in_place_write(v, false, op);
      if (n > 0) std::memcpy(target.raw_data(), data + at, n);
    } else {
      const Tensor value =
          empty_tensor(v.shape(), v.dtype(), Device::cpu(), op);
      if (n > 0) std::memcpy(value.raw_data(), data + at, n);
      write_into(v, value.to(v.device()), op);
    }
    at += n;
  }
  if (at != size)
    throw op_error<DistError>(op, "expected ", at, " bytes of values, got ",
                              size);
}

}  // namespace detail

namespace {

std::unique_ptr<optim::Optimizer> checked_optimizer(
    const OptimizerFactory& make_optimizer, const char* op) {
  if (!make_optimizer)
    throw op_error<ValueError>(op,
                               "expected an optimizer factory, got an empty "
                               "std::function");
  std::unique_ptr<optim::Optimizer> optimizer = make_optimizer();
  if (!optimizer)
    throw op_error<ValueError>(op,
                               "expected the optimizer factory to return an "
                               "optimizer, got a null pointer");
  return optimizer;
}

void check_not_done(const detail::PsState& s, const char* op) {
  if (s.done)
    throw op_error<ValueError>(op, "expected no ", op,
                               " after done(), got one");
}

void check_worker(const detail::PsState& s, const char* op) {
  if (s.created.empty() && s.owner.empty())
    throw op_error<ValueError>(op, "expected create() before ", op);
  if (!s.server->local && s.server->task.job_name != "worker")
    throw op_error<ValueError>(op, "expected a worker task, got ",
                               s.server->task.job_name, " ",
                               s.server->task.task_index);
}

}  // namespace

ParameterClient::ParameterClient(Server& server, PsOptions options)
    : s_(std::make_shared<detail::PsState>()) {
  detail::expect_steps();
  s_->server = server.state();
  s_->options = options;
  const ClusterSpec& c = server.cluster();
  s_->num_ps = c.num_tasks("ps");
  s_->num_workers = c.num_tasks("worker");
  if (!server.is_local() && s_->num_ps == 0)
    throw op_error<ValueError>("ParameterClient",
                               "expected a cluster with a ps job");
  if (options.replicas_to_aggregate > 0) {
    const int total = options.total_num_replicas > 0
                          ? options.total_num_replicas
                          : s_->num_workers;
    if (total != s_->num_workers ||
        options.replicas_to_aggregate > s_->num_workers)
      throw op_error<ValueError>("ParameterClient",
                                 "expected replicas_to_aggregate <= "
                                 "total_num_replicas = ",
                                 s_->num_workers, " (the workers), got ",
                                 options.replicas_to_aggregate, " of ", total);
  }
}

ParameterClient::~ParameterClient() {
  try {
    if (s_->server->task.job_name == "worker" && !s_->owner.empty()) done();
  } catch (const Error&) {
    // The job is ending anyway; mpirun or the watchdog reports it.
  }
}

void ParameterClient::create(const NamedVariables& variables,
                             const OptimizerFactory& make_optimizer,
                             Placement placement) {
  constexpr const char* kOp = "create";
  detail::PsState& s = *s_;
  if (!s.owner.empty() || !s.created.empty())
    throw op_error<ValueError>(kOp, "expected one create() per client");
  // Every task makes one (a worker drops it), so that a factory that fails
  // fails everywhere instead of leaving the workers waiting on the ps.
  std::unique_ptr<optim::Optimizer> optimizer =
      checked_optimizer(make_optimizer, kOp);
  std::vector<Variable> created;
  for (const auto& [name, v] : variables) created.push_back(v);
  if (s.server->local) {
    s.optimizer = std::move(optimizer);
    s.created = std::move(created);
    return;
  }
  // Nothing is kept until every task has agreed: a create() that throws
  // leaves the client as it was.
  std::vector<detail::Piece> pieces =
      detail::cut(variables, s.num_ps, placement);
  std::vector<int> owner =
      detail::place(variables, pieces, s.num_ps, placement);
  MPI_Comm comm = MPI_COMM_NULL;
  detail::check_mpi(MPI_Comm_dup(world().state()->comm, &comm), kOp);
  try {
    detail::check_same_everywhere(
        comm, kOp,
        "variables (their count, names, dtypes, shapes and placement)",
        static_cast<int64_t>(variables.size()),
        detail::layout_of(variables, pieces, owner));
  } catch (const Error&) {
    MPI_Comm_free(&comm);
    throw;
  }
  s.comm = comm;
  s.created = std::move(created);
  s.pieces = std::move(pieces);
  s.owner = std::move(owner);
  const TaskSpec& task = s.server->task;
  const int chief = s.worker_rank(0);
  // Every task reads the same directory: all resume, or none does.
  const int64_t resume = detail::latest_committed(s.options.checkpoint_dir);
  s.resumed_step = std::max<int64_t>(resume, 0);
  if (task.job_name == "ps") {
    for (size_t p : s.owned_by(task.task_index))
      s.shard.push_back(Variable(
          s.piece_of(variables[s.pieces[p].var].second, p).cpu().contiguous()));
    s.optimizer = std::move(optimizer);
    s.optimizer->build(s.shard);
    if (!s.shard.empty() && resume >= 0) {
      detail::load_shard(s, resume);
    } else if (!s.shard.empty()) {
      // The chief's values are the start.
      MPI_Status status;
      detail::InFlight flight(kOp, 0);
      detail::check_mpi(MPI_Probe(chief, detail::kInit, s.comm, &status), kOp);
      int bytes = 0;
      MPI_Get_count(&status, MPI_BYTE, &bytes);
      std::vector<char> values(size_t(bytes), 0);
      detail::check_mpi(MPI_Recv(values.data(), bytes, MPI_BYTE, chief,
                                 detail::kInit, s.comm, MPI_STATUS_IGNORE),
                        kOp);
      detail::unpack_into(values.data(), values.size(),
                          std::vector<Tensor>(s.shard.begin(), s.shard.end()),
                          kOp);
    }
    std::weak_ptr<detail::PsState> weak = s_;
    s.server->serve.push_back([weak] {
      if (auto state = weak.lock()) detail::serve(*state);
    });
  } else if (task.job_name == "worker" && task.task_index == 0 && resume < 0) {
    for (int k = 0; k < s.num_ps; ++k) {
      std::vector<Tensor> values;
      for (size_t p : s.owned_by(k))
        values.push_back(s.piece_of(s.created[s.pieces[p].var], p));
      if (values.empty()) continue;
      detail::send_parts({}, values, k, detail::kInit, s.comm, kOp);
    }
  }
}

void ParameterClient::pull(const std::vector<Variable>& params,
                           int64_t min_global_step) {
  constexpr const char* kOp = "pull";
  detail::PsState& s = *s_;
  check_worker(s, kOp);
  check_not_done(s, kOp);
  if (params.size() != s.created.size())
    throw op_error<ValueError>(kOp, "expected ", s.created.size(),
                               " variables (those created), got ",
                               params.size());
  for (size_t i = 0; i < params.size(); ++i) {
    if (!(params[i].shape() == s.created[i].shape()))
      throw op_error<ShapeError>(kOp, "expected variable ", i, " of shape ",
                                 s.created[i].shape().str(), ", got ",
                                 params[i].shape().str());
    if (params[i].dtype() != s.created[i].dtype())
      throw op_error<DTypeError>(kOp, "expected variable ", i, " of dtype ",
                                 dtype_name(s.created[i].dtype()), ", got ",
                                 dtype_name(params[i].dtype()));
  }
  if (s.server->local) return;  // the variables are the values
  int64_t lowest = INT64_MAX;
  for (int k = 0; k < s.num_ps; ++k) {
    const std::vector<size_t> mine = s.owned_by(k);
    if (mine.empty()) continue;
    detail::InFlight flight(kOp, uint64_t(s.clock));
    detail::check_mpi(
        MPI_Send(&min_global_step, 1, MPI_INT64_T, k, detail::kPull, s.comm),
        kOp);
    MPI_Status status;
    detail::check_mpi(MPI_Probe(k, detail::kValues, s.comm, &status), kOp);
    int bytes = 0;
    MPI_Get_count(&status, MPI_BYTE, &bytes);
    std::vector<char> msg(size_t(bytes), 0);
    detail::check_mpi(MPI_Recv(msg.data(), bytes, MPI_BYTE, k, detail::kValues,
                               s.comm, MPI_STATUS_IGNORE),
                      kOp);
    int64_t step = 0;
    if (msg.size() < sizeof step)
      throw op_error<DistError>(kOp, "expected a step from ps ", k, ", got ",
                                msg.size(), " bytes");
    std::memcpy(&step, msg.data(), sizeof step);
    lowest = std::min(lowest, step);
    std::vector<Tensor> into;
    for (size_t p : mine)
      into.push_back(s.piece_of(params[s.pieces[p].var], p));
    detail::unpack_into(msg.data() + sizeof step, msg.size() - sizeof step,
                        into, kOp);
  }
  if (lowest != INT64_MAX) s.global_step = lowest;
}

void ParameterClient::push(const std::vector<Tensor>& grads) {
  constexpr const char* kOp = "push";
  detail::PsState& s = *s_;
  check_worker(s, kOp);
  check_not_done(s, kOp);
  if (grads.size() != s.created.size())
    throw op_error<ValueError>(kOp, "expected ", s.created.size(),
                               " gradients (one per variable), got ",
                               grads.size());
  for (size_t i = 0; i < grads.size(); ++i)
    if (grads[i].defined() && !(grads[i].shape() == s.created[i].shape()))
      throw op_error<ShapeError>(kOp, "expected gradient ", i, " of shape ",
                                 s.created[i].shape().str(), ", got ",
                                 grads[i].shape().str());
  ++s.clock;
  if (s.server->local) {
    s.optimizer->apply_gradients(grads, s.created);
    ++s.global_step;
    return;
  }
  for (int k = 0; k < s.num_ps; ++k) {
    const std::vector<size_t> mine = s.owned_by(k);
    if (mine.empty()) continue;
    std::vector<char> msg(sizeof s.global_step);
    std::memcpy(msg.data(), &s.global_step, sizeof s.global_step);
    std::vector<Tensor> defined;
    for (size_t p : mine) {
      const size_t i = s.pieces[p].var;
      msg.push_back(grads[i].defined());
      if (grads[i].defined())
        defined.push_back(s.piece_of(grads[i].dtype() == s.created[i].dtype()
                                         ? grads[i]
                                         : grads[i].cast(s.created[i].dtype()),
                                     p));
    }
    detail::InFlight flight(kOp, uint64_t(s.clock));
    detail::send_parts(msg, defined, k, detail::kPush, s.comm, kOp);
  }
  detail::step_completed();
}

void ParameterClient::done() {
  detail::PsState& s = *s_;
  check_worker(s, "done");
  if (s.done || s.server->local) return;
  s.done = true;
  for (int k = 0; k < s.num_ps; ++k)
    detail::check_mpi(MPI_Send(nullptr, 0, MPI_BYTE, k, detail::kDone, s.comm),
                      "done");
}

std::string ParameterClient::save() {
  constexpr const char* kOp = "save";
  detail::PsState& s = *s_;
  check_worker(s, kOp);
  check_not_done(s, kOp);
  if (s.options.checkpoint_dir.empty())
    throw op_error<ValueError>(kOp, "expected PsOptions.checkpoint_dir");
  if (s.server->local || s.server->task.task_index != 0) return "";
  const int64_t n = s.global_step;
  nlohmann::json shards = nlohmann::json::array();
  for (int k = 0; k < s.num_ps; ++k) {
    if (s.owned_by(k).empty()) continue;
    detail::InFlight flight(kOp, uint64_t(n));
    detail::check_mpi(MPI_Send(&n, 1, MPI_INT64_T, k, detail::kSave, s.comm),
                      kOp);
    int64_t saved = 0;
    detail::check_mpi(MPI_Recv(&saved, 1, MPI_INT64_T, k, detail::kSaved,
                               s.comm, MPI_STATUS_IGNORE),
                      kOp);
    shards.push_back({{"file", std::filesystem::path(
                                   detail::shard_path(s.options.checkpoint_dir,
                                                      n, k, s.num_ps))
                                   .filename()
                                   .string()},
                      {"global_step", saved}});
  }
  const char* generation = std::getenv("TPF_RUN_GENERATION");
  const nlohmann::json manifest = {
      {"step", n},
      {"num_ps", s.num_ps},
      {"shards", shards},
      {"generation", generation ? std::atoi(generation) : 0}};
  const std::string path =
      s.options.checkpoint_dir + "/ckpt-" + std::to_string(n) + ".json";
  io::detail::write_atomically(path, kOp, [&](const std::string& tmp) {
    std::ofstream(tmp) << manifest.dump(2) << "\n";
  });
  return path;
}

int64_t ParameterClient::resumed_step() const {
  return s_->resumed_step;
}

int ParameterClient::owner(size_t i) const {
  if (i >= s_->created.size())
    throw op_error<IndexError>("owner", "expected a variable index in [0, ",
                               s_->created.size(), "), got ", i);
  if (s_->server->local) return 0;
  for (size_t p = 0; p < s_->pieces.size(); ++p)
    if (s_->pieces[p].var == i) return s_->owner[p];
  return 0;
}

int ParameterClient::parts(size_t i) const {
  if (i >= s_->created.size())
    throw op_error<IndexError>("parts", "expected a variable index in [0, ",
                               s_->created.size(), "), got ", i);
  int n = 0;
  for (const detail::Piece& p : s_->pieces) n += p.var == i;
  return std::max(n, 1);
}
int64_t ParameterClient::clock() const {
  return s_->clock;
}
int64_t ParameterClient::global_step() const {
  return s_->global_step;
}

SyncReplicasOptimizer::SyncReplicasOptimizer(ParameterClient& client)
    : client_(client) {}

void SyncReplicasOptimizer::apply_gradients(
    const std::vector<Tensor>& grads, const std::vector<Variable>& params) {
  const int64_t step = client_.global_step();
  client_.push(grads);
  client_.pull(params, step + 1);
}
PsStats ParameterClient::stats() const {
  return s_->stats;
}

}  // namespace tapeflow::dist
