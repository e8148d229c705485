#pragma once
// TensorFlow 1's cluster vocabulary over MPI ranks: a ClusterSpec of jobs
// ("ps", "worker") and their tasks, the TaskSpec a process runs, and the
// Server that knows it. Every process runs the same program under mpirun:
//   mpirun -np 3 ./train --job_name=worker --task_index=0 ...
// MPI rank r is task r of the jobs in order: ps first, then worker, then any
// other job by name. See docs/distributed.md.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "tapeflow/dist/communicator.hpp"

namespace tapeflow::dist {

/** A job's name and a task index in it (empty / -1: not given). */
struct TaskSpec {
  std::string job_name;
  int task_index = -1;
};

/** --job_name and --task_index from argv ("--x=v" or "--x v"). */
TaskSpec task_from(int argc, char** argv);

class ClusterSpec {
 public:
  ClusterSpec() = default;
  /** Each job's task addresses ("host:port"; informative under mpirun). */
  explicit ClusterSpec(std::map<std::string, std::vector<std::string>> jobs);
  /** {"ps": ["h1:2222"], "worker": ["h2:2222", "h3:2222"]} */
  static ClusterSpec from_json(const std::string& path);
  /** The seeds' --ps_hosts and --worker_hosts: comma-separated addresses. */
  static ClusterSpec from_flags(const std::string& ps_hosts,
                                const std::string& worker_hosts);
  /** `num_ps` ps tasks, and every other rank of world() a worker. */
  static ClusterSpec from_world(int num_ps);

  /** Job names in rank order: ps, worker, then the rest by name. */
  std::vector<std::string> jobs() const;
  int num_tasks(const std::string& job) const;
  const std::vector<std::string>& job_tasks(const std::string& job) const;
  /** Tasks of all jobs: the number of ranks the cluster needs. */
  int size() const;
  /** The task MPI rank `rank` runs, and back. */
  TaskSpec task_of_rank(int rank) const;
  int rank_of(const TaskSpec& task) const;

 private:
  std::map<std::string, std::vector<std::string>> jobs_;
};

namespace detail {
struct ServerState;
}

/**
 * This process's place in the cluster. Under mpirun the cluster must have
 * one task per rank; a TaskSpec given on the command line must name the
 * task of this rank (ValueError saying both otherwise). The chief is worker
 * 0. create_local_server() is one process in both roles, with no transport
 * (the seeds' single-process cluster).
 */
class Server {
 public:
  explicit Server(ClusterSpec cluster, TaskSpec task = {});
  static Server create_local_server();

  const std::string& job_name() const;
  int task_index() const;
  bool is_chief() const;
  /** Local: ps and worker at once, in one process. */
  bool is_local() const;
  const ClusterSpec& cluster() const;
  /**
   * On a ps task: serves the ParameterClient made on this process until
   * every worker has called done(); returns 0 (a main() can return it).
   */
  int join();

  const std::shared_ptr<detail::ServerState>& state() const { return state_; }

 private:
  explicit Server(std::shared_ptr<detail::ServerState> state);
  std::shared_ptr<detail::ServerState> state_;
};

}  // namespace tapeflow::dist
