#pragma once
// --distributed: data parallelism over MPI ranks, e.g.
//   mpirun -np 2 build/samples/mnist_cnn --distributed
// Each rank trains on its slice of every global batch of --batch-size images
// and applies the gradients averaged over the ranks, so the run follows the
// one-process run at the same global batch.
#include <algorithm>
#include <cstdio>
#include <memory>
#include <random>
#include <tapeflow/dist.hpp>
#include <thread>

#include "common/trainer.hpp"

namespace samples {

/** Sets `c` up for this rank; ranks other than 0 print nothing. */
inline void setup_distributed(TrainConfig& c) {
  namespace dist = tpf::dist;
  auto& world = dist::world();
  if (c.batch_size % world.size() != 0)
    throw tpf::ValueError(
        "[--distributed] expected a --batch-size that is a "
        "multiple of the " +
        std::to_string(world.size()) + " ranks, got " +
        std::to_string(c.batch_size));
  // One seed for the job (rank 0's): equal weights and shuffles everywhere.
  const auto seed = tpf::zeros({1}, tpf::int64);
  if (world.rank() == 0)
    seed.data<int64_t>()[0] =
        c.seed >= 0 ? c.seed
                    : static_cast<int64_t>(std::random_device{}() >> 1);
  world.broadcast(seed, 0);
  c.seed = seed.item<int64_t>();
  if (c.threads == 0)
    c.threads =
        std::max(1, static_cast<int>(std::thread::hardware_concurrency()) /
                        world.local_size());
  c.replication.rank = world.rank();
  c.replication.ranks = world.size();
  auto ddp = std::make_shared<std::unique_ptr<dist::DistributedDataParallel>>();
  c.replication.gradient = [ddp](tpf::GradientTape& tape,
                                 const tpf::Tensor& loss,
                                 const std::vector<tpf::Variable>& params) {
    // Made at the first step, after a resume: it broadcasts rank 0's weights.
    if (!*ddp) *ddp = std::make_unique<dist::DistributedDataParallel>(params);
    return (*ddp)->gradient(tape, loss);
  };
  const auto job_seed = static_cast<uint64_t>(c.seed);
  c.replication.reseed = [job_seed](int64_t epoch, int64_t step) {
    if (step < 0)
      tpf::manual_seed(job_seed ^ (0x9e3779b97f4a7c15ULL * (epoch + 1)));
    else
      dist::manual_seed_step(job_seed, step);  // dropout differs per rank
  };
  if (world.rank() != 0 && std::freopen("/dev/null", "w", stdout) == nullptr)
    std::perror("freopen");
}

}  // namespace samples
