#pragma once
// DDP's buckets: gradients packed into flat buffers in the order the tape
// finalizes them, each reduced by one collective (fewer, larger messages),
// and started as soon as it is full when overlap is on.
#include <cstdint>
#include <vector>

#include "tapeflow/autograd.hpp"
#include "tapeflow/dist/communicator.hpp"

namespace tapeflow::dist::detail {

struct BucketOptions {
  int64_t first_bytes;
  int64_t cap_bytes;
};

struct BucketPlan {
  std::vector<std::vector<size_t>> members;  // parameter indices, in order
  std::vector<DType> dtypes;                 // one dtype per bucket
  std::vector<Device> devices;               // and one device: the params'

  std::vector<int64_t> elements;   // per bucket
  std::vector<size_t> bucket_of;   // per parameter
  std::vector<int64_t> offset_of;  // per parameter, in elements
  std::vector<int64_t> numel_of;   // per parameter
};

/**
 * Buckets over `order` (the parameters in the order their gradients became
 * final here), after taking rank 0's order so that every rank reduces the
 * same buckets in the same sequence.
 */
BucketPlan plan_buckets(const std::vector<Variable>& params,
                        std::vector<size_t> order, const BucketOptions& options,
                        Communicator& comm);

/** One step's buckets: filled by ready(), reduced, then unpacked. */
class BucketStep {
 public:
  BucketStep(const BucketPlan& plan, Communicator& comm, Order order,
             bool overlap);
  /** Copies parameter i's gradient (undefined: zeros) into its bucket. */
  void ready(size_t i, const Tensor& grad);
  /** Lets MPI move the open reductions along (it has no progress thread). */
  void progress();
  /** Reduces what is left, waits, and returns the averaged gradients. */
  std::vector<Tensor> finish(const std::vector<Variable>& params);

 private:
  void launch_full_buckets();

  const BucketPlan& plan_;
  Communicator& comm_;
  Order order_;
  bool overlap_;
  std::vector<Tensor> flats_;
  std::vector<size_t> missing_;
  std::vector<Work> works_;
  size_t launched_ = 0;
  Tensor used_;  // int32 per parameter: 1 where this rank has a gradient
};

/** FNV-1a over every parameter's bytes: replicas compare these. */
int64_t parameter_hash(const std::vector<Variable>& params);

}  // namespace tapeflow::dist::detail
