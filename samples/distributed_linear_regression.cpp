// The seeds' Y = 2X + 10 on parameter servers: one program, one role per
// process, TF 1's flags. With mpirun's colon syntax each process gets its own:
//   mpirun -np 1 distributed_linear_regression --job_name=ps --task_index=0 :
//          -np 1 distributed_linear_regression --job_name=worker --task_index=0
//          : -np 1 distributed_linear_regression --job_name=worker
//          --task_index=1
// or one command for all, roles taken from the ranks (ps first):
//   mpirun -np 3 distributed_linear_regression --ps_hosts=h1:2222
//          --worker_hosts=h2:2222,h3:2222 [--sync]
// Asynchronous by default; --sync aggregates every worker's gradients per
// step (SyncReplicasOptimizer). Exit status 0 once W and b are within 0.05.
#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdio>
#include <tapeflow/dist.hpp>
#include <tapeflow/tapeflow.hpp>

namespace tpf = tapeflow;
namespace dist = tpf::dist;

int main(int argc, char** argv) {
  CLI::App app{"Y = 2X + 10 on parameter servers (run under mpirun)"};
  std::string ps_hosts = "localhost:2222", worker_hosts, cluster_file;
  dist::TaskSpec task;
  bool sync = false;
  int steps = 300;
  app.add_option("--ps_hosts", ps_hosts, "comma-separated ps tasks");
  app.add_option("--worker_hosts", worker_hosts,
                 "comma-separated worker tasks (default: every other rank)");
  app.add_option("--cluster", cluster_file, "a ClusterSpec JSON file instead");
  app.add_option("--job_name", task.job_name, "ps or worker");
  app.add_option("--task_index", task.task_index, "index in the job");
  app.add_flag("--sync", sync, "synchronous replicas (all workers per step)");
  app.add_option("--steps", steps, "global steps")->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  try {
    dist::ClusterSpec cluster;
    if (!cluster_file.empty()) {
      cluster = dist::ClusterSpec::from_json(cluster_file);
    } else if (!worker_hosts.empty()) {
      cluster = dist::ClusterSpec::from_flags(ps_hosts, worker_hosts);
    } else {
      const int num_ps = static_cast<int>(
          dist::ClusterSpec::from_flags(ps_hosts, "").num_tasks("ps"));
      cluster = dist::ClusterSpec::from_world(num_ps);
    }
    dist::Server server(cluster, task);
    const int workers = cluster.num_tasks("worker");
    std::printf("rank %d: %s task %d of %d ps and %d workers (%s)\n",
                dist::world().rank(), server.job_name().c_str(),
                server.task_index(), cluster.num_tasks("ps"), workers,
                sync ? "sync" : "async");

    tpf::Variable w(tpf::zeros({1, 1})), b(tpf::zeros({1}));
    dist::PsOptions options;
    if (sync) options.replicas_to_aggregate = workers;
    dist::ParameterClient ps(server, options);
    ps.create({{"w", w}, {"b", b}},
              [] { return std::make_unique<tpf::optim::SGD>(0.2); });
    if (server.job_name() == "ps") return server.join();

    // Each worker has its own 1000 noisy points.
    tpf::manual_seed(static_cast<uint64_t>(server.task_index()));
    const auto x = tpf::random_uniform({1000, 1}, -1.f, 1.f);
    const auto y = 2.0 * x + 10.0 + tpf::random_normal({1000, 1}, 0.f, 0.1f);
    dist::SyncReplicasOptimizer replicas(ps);
    const std::vector<tpf::Variable> params = {w, b};
    ps.pull(params);
    // Async: each worker's share of the global steps; sync: every step.
    const int64_t mine = sync ? steps : (steps + workers - 1) / workers;
    for (int64_t i = 0; sync ? ps.global_step() < steps : i < mine; ++i) {
      if (!sync) ps.pull(params);
      tpf::GradientTape tape;
      const auto loss = tpf::mean(tpf::square(tpf::matmul(x, w) + b - y));
      const auto g = tape.gradient(loss, {w, b});
      if (sync)
        replicas.apply_gradients(g, params);
      else
        ps.push(g);
    }
    // Async: a worker that finishes its share first waits for the others'
    // pushes, so that it reads the model they all trained, not one mid-way.
    ps.pull(params, sync ? 0 : ps.resumed_step() + mine * workers);
    ps.done();
    const double wv = w.item<double>(), bv = b.item<double>();
    std::printf("worker %d: fitted Y = %.4f X + %.4f (true: Y = 2 X + 10)\n",
                server.task_index(), wv, bv);
    return std::abs(wv - 2.0) < 0.05 && std::abs(bv - 10.0) < 0.05 ? 0 : 1;
  } catch (const tpf::Error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 2;
  }
}
