#include "dist/buckets.hpp"

#include <cstring>

#include "core/creation_internal.hpp"
#include "core/op_error.hpp"
#include "dist/host_view.hpp"
#include "tapeflow/creation.hpp"
#include "tapeflow/ops/shape.hpp"

namespace tapeflow::dist::detail {
namespace {

constexpr const char* kOp = "DistributedDataParallel";

/** Rank 0's order, checked to be a permutation of the parameters. */
std::vector<size_t> agreed_order(std::vector<size_t> order, size_t count,
                                 Communicator& comm) {
  const Tensor t = zeros({static_cast<int64_t>(count)}, DType::int64);
  int64_t* data = t.data<int64_t>();
  for (size_t k = 0; k < count; ++k) data[k] = static_cast<int64_t>(order[k]);
  comm.broadcast(t, 0);
  std::vector<char> seen(count, 0);
  for (size_t k = 0; k < count; ++k) {
    const int64_t i = data[k];
    if (i < 0 || i >= static_cast<int64_t>(count) || seen[i])
      throw op_error<DistError>(kOp,
                                "expected rank 0's bucket order to list "
                                "each of this rank's ",
                                count,
                                " parameters once; the ranks' parameter "
                                "lists differ");
    seen[i] = 1;
    order[k] = static_cast<size_t>(i);
  }
  return order;
}

}  // namespace

BucketPlan plan_buckets(const std::vector<Variable>& params,
                        std::vector<size_t> order, const BucketOptions& options,
                        Communicator& comm) {
  order = agreed_order(std::move(order), params.size(), comm);
  BucketPlan plan;
  plan.bucket_of.resize(params.size());
  plan.offset_of.resize(params.size());
  plan.numel_of.resize(params.size());
  int64_t bytes = 0;
  for (size_t i : order) {
    const Variable& p = params[i];
    const int64_t size = p.numel() * static_cast<int64_t>(itemsize(p.dtype()));
    const int64_t cap =
        plan.members.size() <= 1 ? options.first_bytes : options.cap_bytes;
    // A gradient as large as the first bucket gains nothing from fusion: it
    // gets a bucket of its own and is reduced where the tape left it.
    const bool alone = size >= options.first_bytes;
    const bool open = !plan.members.empty() && !alone &&
                      plan.dtypes.back() == p.dtype() &&
                      plan.devices.back() == p.device() && bytes + size <= cap;
    if (!open) {
      plan.members.emplace_back();
      plan.dtypes.push_back(p.dtype());
      plan.devices.push_back(p.device());
      plan.elements.push_back(0);
      bytes = 0;
    }
    plan.members.back().push_back(i);
    plan.bucket_of[i] = plan.members.size() - 1;
    plan.offset_of[i] = plan.elements.back();
    plan.numel_of[i] = p.numel();
    plan.elements.back() += p.numel();
    bytes = alone ? options.cap_bytes : bytes + size;  // closes it
  }
  return plan;
}

BucketStep::BucketStep(const BucketPlan& plan, Communicator& comm, Order order,
                       bool overlap)
    : plan_(plan), comm_(comm), order_(order), overlap_(overlap) {
  flats_.resize(plan.members.size());
  for (const auto& members : plan.members) missing_.push_back(members.size());
  used_ = zeros({static_cast<int64_t>(plan.bucket_of.size())}, DType::int32);
}

namespace {

/**
 * A gradient a bucket of its own can reduce in place, saving a copy: the
 * bucket's dtype, contiguous on the CPU, and the only tensor on its buffer
 * (a broadcast or a view of another tensor would be written through).
 */
bool reducible_in_place(const Tensor& g, DType dtype, Device device) {
  return g.defined() && g.dtype() == dtype && g.device() == device &&
         g.is_contiguous() && g.offset() == 0 &&
         g.impl()->storage.use_count() == 1;
}

}  // namespace

void BucketStep::ready(size_t i, const Tensor& grad) {
  const size_t b = plan_.bucket_of[i];
  if (grad.defined()) used_.data<int32_t>()[i] = 1;
  if (!flats_[b].defined()) {
    if (plan_.members[b].size() == 1 &&
        reducible_in_place(grad, plan_.dtypes[b], plan_.devices[b])) {
      flats_[b] = grad;
      --missing_[b];
      if (overlap_) launch_full_buckets();
      return;
    }
    flats_[b] = empty_tensor(Shape{plan_.elements[b]}, plan_.dtypes[b],
                             plan_.devices[b], kOp);
  }
  const Tensor& flat = flats_[b];
  NoGradGuard no_grad;
  if (flat.device() != Device::cpu()) {
    // A GPU bucket: filled by the device's own copy kernel.
    const Shape shape{plan_.numel_of[i]};
    const Tensor slot = make_view(flat, shape, contiguous_strides(shape),
                                  flat.offset() + plan_.offset_of[i]);
    write_into(slot,
               grad.defined() ? reshape(grad.to(flat.device()), shape)
                              : zeros(shape, flat.dtype(), flat.device()),
               kOp);
  } else {
    const size_t item = itemsize(flat.dtype());
    char* dst = static_cast<char*>(flat.raw_data()) + plan_.offset_of[i] * item;
    const size_t bytes = static_cast<size_t>(plan_.numel_of[i]) * item;
    // An empty parameter copies nothing (its buffer may be null).
    if (bytes > 0 && grad.defined()) {
      Tensor g = grad.dtype() == flat.dtype() ? grad : grad.cast(flat.dtype());
      g = materialize(g.to(Device::cpu()));
      std::memcpy(dst, g.raw_data(), bytes);
    } else if (bytes > 0) {
      std::memset(dst, 0, bytes);  // zeros: other ranks may have a gradient
    }
  }
  --missing_[b];
  if (overlap_) launch_full_buckets();
}

void BucketStep::launch_full_buckets() {
  // Strictly in bucket order, so that every rank issues the same sequence,
  // and one at a time: a communicator has one nonblocking collective in
  // flight (CommState::in_flight), so starting the next would wait here.
  while (launched_ < flats_.size() && missing_[launched_] == 0) {
    if (!works_.empty() && !works_.back().test()) return;
    works_.push_back(
        comm_.all_reduce_async(flats_[launched_], ReduceOp::mean, order_));
    ++launched_;
  }
}

void BucketStep::progress() {
  launch_full_buckets();  // tests the reduction in flight, starts the next
}

std::vector<Tensor> BucketStep::finish(const std::vector<Variable>& params) {
  if (!overlap_) {
    // Nothing left to overlap with: MPI's blocking calls are faster.
    for (; launched_ < flats_.size() && missing_[launched_] == 0; ++launched_)
      comm_.all_reduce(flats_[launched_], ReduceOp::mean, order_);
  }
  while (launched_ < flats_.size() && missing_[launched_] == 0) {
    if (!works_.empty()) works_.back().wait();
    launch_full_buckets();
  }
  if (launched_ != flats_.size())
    throw op_error<ValueError>(kOp, "expected every parameter's gradient, ",
                               flats_.size() - launched_,
                               " buckets are incomplete");
  comm_.all_reduce(used_, ReduceOp::sum, Order::fast);
  for (Work& w : works_) w.wait();
  std::vector<Tensor> out(params.size());
  const int32_t* used = used_.data<int32_t>();
  for (size_t i = 0; i < params.size(); ++i) {
    if (used[i] == 0) continue;  // no rank used it: as in one process
    const Shape& shape = params[i].shape();
    const Tensor g = make_view(flats_[plan_.bucket_of[i]], shape,
                               contiguous_strides(shape), plan_.offset_of[i]);
    out[i] = g;  // the bucket is on the parameter's device
  }
  return out;
}

int64_t parameter_hash(const std::vector<Variable>& params) {
  uint64_t h = 1469598103934665603ULL;
  const auto mix = [&h](const void* data, size_t n) {
    const auto* bytes = static_cast<const unsigned char*>(data);
    for (size_t k = 0; k < n; ++k) h = (h ^ bytes[k]) * 1099511628211ULL;
  };
  // Dtype and shape first: equal bytes split or typed otherwise must differ.
  for (const Variable& p : params) {
    const Tensor host = materialize(p.to(Device::cpu()));
    const auto dtype = static_cast<int64_t>(host.dtype());
    const int64_t rank = host.rank();
    mix(&dtype, sizeof dtype);
    mix(&rank, sizeof rank);
    mix(host.shape().begin(), static_cast<size_t>(rank) * sizeof(int64_t));
    mix(host.raw_data(),
        static_cast<size_t>(host.numel()) * itemsize(host.dtype()));
  }
  return static_cast<int64_t>(h);
}

}  // namespace tapeflow::dist::detail
