#include "tapeflow/dist/data_parallel.hpp"

#include <cstring>
#include <optional>
#include <unordered_set>

#include "core/creation_internal.hpp"
#include "core/op_error.hpp"
#include "dist/agreement.hpp"
#include "dist/buckets.hpp"
#include "dist/host_view.hpp"
#include "dist/watchdog.hpp"
#include "dist/work.hpp"
#include "tapeflow/creation.hpp"

namespace tapeflow::dist {

struct DistributedDataParallel::State {
  State(std::vector<Variable> p, DataParallelOptions o, Communicator c)
      : params(std::move(p)), options(o), comm(std::move(c)) {}
  std::vector<Variable> params;
  DataParallelOptions options;
  Communicator comm;
  std::optional<detail::BucketPlan> plan;
  bool overlap = false;
  int64_t steps = 0;
};

namespace {

bool overlap_pays(const DataParallelOptions& o, const Communicator& comm,
                  const std::vector<Variable>& params) {
  if (o.overlap != Overlap::automatic) return o.overlap == Overlap::on;
  if (comm.size() == 1) return false;
  bool on_gpu = false;
  for (const Variable& p : params) on_gpu |= p.device() != Device::cpu();
  return on_gpu || comm.local_size() < comm.size();
}

}  // namespace

DistributedDataParallel::DistributedDataParallel(
    std::vector<Variable> parameters, DataParallelOptions options)
    : DistributedDataParallel(std::move(parameters), options, world()) {}

DistributedDataParallel::DistributedDataParallel(
    std::vector<Variable> parameters, DataParallelOptions options,
    Communicator comm)
    : s_(std::make_unique<State>(std::move(parameters), options,
                                 std::move(comm))) {
  constexpr const char* kOp = "DistributedDataParallel";
  detail::expect_steps();
  for (size_t i = 0; i < s_->params.size(); ++i) {
    const Variable& p = s_->params[i];
    if (!p.defined() || !is_floating(p.dtype()))
      throw op_error<ValueError>(kOp,
                                 "expected defined float parameters, "
                                 "parameter ",
                                 i, " is not");
  }
  std::unordered_set<const void*> seen;
  for (const Variable& p : s_->params)
    if (!seen.insert(p.impl()).second)
      throw op_error<ValueError>(kOp,
                                 "expected each parameter once, got one "
                                 "twice (shape ",
                                 p.shape().str(), ")");
  if (!(options.bucket_cap_mb > 0) || !(options.first_bucket_mb > 0))
    throw op_error<ValueError>(kOp, "expected bucket sizes > 0 MB, got ",
                               options.first_bucket_mb, " and ",
                               options.bucket_cap_mb);
  detail::CommState& c = *s_->comm.state();
  detail::settle(c);
  detail::check_same_everywhere(c.comm, kOp,
                                "parameters (their count, dtypes and shapes)",
                                static_cast<int64_t>(s_->params.size()),
                                detail::layout_hash(std::vector<Tensor>(
                                    s_->params.begin(), s_->params.end())));
  s_->overlap = overlap_pays(options, s_->comm, s_->params);
  std::vector<Work> pending;
  for (const Variable& p : s_->params)
    pending.push_back(s_->comm.broadcast_async(p, 0));
  for (Work& w : pending) w.wait();
}

DistributedDataParallel::~DistributedDataParallel() = default;

std::vector<Tensor> DistributedDataParallel::gradient(
    GradientTape& tape, const Tensor& loss,
    const std::vector<Variable>& parameters) {
  bool same = parameters.size() == s_->params.size();
  for (size_t i = 0; same && i < parameters.size(); ++i)
    same = parameters[i].is_same(s_->params[i]);
  if (!same)
    throw op_error<ValueError>(
        "DistributedDataParallel.gradient",
        "expected the parameters given at construction (", s_->params.size(),
        " of them), got another list of ", parameters.size());
  return gradient(tape, loss);
}

std::vector<Tensor> DistributedDataParallel::gradient(GradientTape& tape,
                                                      const Tensor& loss) {
  State& s = *s_;
  const std::vector<Tensor> sources(s.params.begin(), s.params.end());
  const detail::BucketOptions bucket_options{
      .first_bytes = static_cast<int64_t>(s.options.first_bucket_mb * 1e6),
      .cap_bytes = static_cast<int64_t>(s.options.bucket_cap_mb * 1e6)};
  if (!s.plan) {
    // Step 1: learn the order the tape finalizes gradients in; rank 0's
    // order (every rank runs the same program) fixes the buckets.
    std::vector<size_t> order;
    GradientOptions learn;
    learn.on_ready = [&](size_t i, const Tensor&) { order.push_back(i); };
    const std::vector<Tensor> grads = tape.gradient(loss, sources, learn);
    s.plan = detail::plan_buckets(s.params, order, bucket_options, s.comm);
    detail::BucketStep step(*s.plan, s.comm, s.options.order, false);
    for (size_t i = 0; i < grads.size(); ++i) step.ready(i, grads[i]);
    std::vector<Tensor> out = step.finish(s.params);
    ++s.steps;
    detail::step_completed();
    return out;
  }
  detail::BucketStep step(*s.plan, s.comm, s.options.order, s.overlap);
  GradientOptions hooks;
  hooks.on_ready = [&](size_t i, const Tensor& g) { step.ready(i, g); };
  if (s.overlap) hooks.after_entry = [&] { step.progress(); };
  tape.gradient(loss, sources, hooks);
  std::vector<Tensor> out = step.finish(s.params);
  ++s.steps;
  return out;
}

void DistributedDataParallel::average_buffers(
    const std::vector<Variable>& buffers) {
  std::vector<Work> pending;
  for (const Variable& b : buffers)
    if (is_floating(b.dtype()))
      pending.push_back(
          s_->comm.all_reduce_async(b, ReduceOp::mean, Order::canonical));
  for (Work& w : pending) w.wait();
}

void DistributedDataParallel::check_replicas() {
  const Tensor mine = zeros({1}, DType::int64);
  const int64_t hash = detail::parameter_hash(s_->params);
  std::memcpy(mine.raw_data(), &hash, sizeof hash);
  const std::vector<int64_t> hashes =
      s_->comm.all_gather(mine).to_vector<int64_t>();
  for (size_t r = 1; r < hashes.size(); ++r)
    if (hashes[r] != hashes[0])
      throw op_error<ReplicaDivergenceError>(
          "check_replicas",
          "expected every rank to hold rank 0's parameters "
          "(hash ",
          hashes[0], "), rank ", r, " has hash ", hashes[r], " after step ",
          s_->steps);
}

const std::vector<std::vector<size_t>>& DistributedDataParallel::buckets()
    const {
  static const std::vector<std::vector<size_t>> none;
  return s_->plan ? s_->plan->members : none;
}
bool DistributedDataParallel::overlaps() const {
  return s_->overlap;
}
int64_t DistributedDataParallel::steps() const {
  return s_->steps;
}

}  // namespace tapeflow::dist
