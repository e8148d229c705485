#pragma once
// --ps N [--workers W]: the seeds' parameter-server MNIST. Under mpirun
// -np N+W, ranks
// 0..N-1 are ps tasks holding the weights and applying SGD, the other W are
// workers that pull the weights, push their gradients, and train on slice w
// of every global batch of --batch-size images. --sync-replicas aggregates
// every worker's gradients per step (SyncReplicasOptimizer).
#include <cstdio>
#include <memory>
#include <tapeflow/dist.hpp>

#include "common/trainer.hpp"

namespace samples {

inline void setup_parameter_servers(TrainConfig& c, int num_ps, int num_workers,
                                    bool sync_replicas) {
  namespace dist = tpf::dist;
  auto server =
      std::make_shared<dist::Server>(dist::ClusterSpec::from_world(num_ps));
  const int workers = server->cluster().num_tasks("worker");
  if (num_workers > 0 && num_workers != workers)
    throw tpf::ValueError("[--workers] expected " + std::to_string(workers) +
                          " (mpirun's ranks minus --ps), got " +
                          std::to_string(num_workers));
  if (c.batch_size % workers != 0)
    throw tpf::ValueError(
        "[--ps] expected a --batch-size that is a multiple "
        "of the " +
        std::to_string(workers) + " workers, got " +
        std::to_string(c.batch_size));
  dist::PsOptions options;
  if (sync_replicas) options.replicas_to_aggregate = workers;
  auto client = std::make_shared<dist::ParameterClient>(*server, options);
  auto sync = std::make_shared<dist::SyncReplicasOptimizer>(*client);
  const bool is_worker = server->job_name() == "worker";
  c.replication.rank = is_worker ? server->task_index() : 0;
  c.replication.ranks = workers;
  const double lr = c.lr;
  c.replication.start = [server, client, lr](tpf::nn::Module& model) {
    client->create(model.named_parameters(),
                   [lr] { return std::make_unique<tpf::optim::SGD>(lr); });
    if (server->job_name() == "ps") return server->join() == 0;
    client->pull(model.parameters());
    return false;
  };
  c.replication.apply = [client, sync, sync_replicas](
                            const std::vector<tpf::Tensor>& grads,
                            const std::vector<tpf::Variable>& params) {
    if (sync_replicas) {
      sync->apply_gradients(grads, params);
    } else {
      client->push(grads);
      client->pull(params);
    }
  };
  if (!server->is_chief() && std::freopen("/dev/null", "w", stdout) == nullptr)
    std::perror("freopen");
}

}  // namespace samples
