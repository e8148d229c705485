#include "tapeflow/dist/cluster.hpp"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/op_error.hpp"
#include "dist/server_state.hpp"

namespace tapeflow::dist {
namespace {

std::vector<std::string> split_hosts(const std::string& list) {
  std::vector<std::string> out;
  std::stringstream in(list);
  for (std::string host; std::getline(in, host, ',');)
    if (!host.empty()) out.push_back(host);
  return out;
}

std::string describe(const TaskSpec& t) {
  return "--job_name=" + t.job_name +
         " --task_index=" + std::to_string(t.task_index);
}

}  // namespace

TaskSpec task_from(int argc, char** argv) {
  TaskSpec task;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    for (const std::string flag : {"--job_name", "--task_index"}) {
      std::string value;
      if (arg == flag && i + 1 < argc) {
        value = argv[++i];
        if (value.rfind("--", 0) == 0)
          throw op_error<ValueError>("task_from", "expected a value after ",
                                     flag, ", got the flag \"", value, "\"");
      } else if (arg.rfind(flag + "=", 0) == 0) {
        value = arg.substr(flag.size() + 1);
      } else {
        continue;
      }
      if (flag == "--job_name") {
        task.job_name = value;
      } else {
        char* end = nullptr;
        const long index = std::strtol(value.c_str(), &end, 10);
        // Digits only: strtol also took " 3" and "+3".
        if (value.empty() ||
            value.find_first_not_of("0123456789") != std::string::npos ||
            *end != '\0' || index > 1 << 20)
          throw op_error<ValueError>("task_from",
                                     "expected --task_index to be a number "
                                     ">= 0, got \"",
                                     value, "\"");
        task.task_index = static_cast<int>(index);
      }
    }
  }
  return task;
}

ClusterSpec::ClusterSpec(std::map<std::string, std::vector<std::string>> jobs)
    : jobs_(std::move(jobs)) {
  for (const auto& [name, tasks] : jobs_)
    if (name.empty() || tasks.empty())
      throw op_error<ValueError>("ClusterSpec",
                                 "expected named jobs with at "
                                 "least one task each, got job \"",
                                 name, "\" with ", tasks.size());
}

ClusterSpec ClusterSpec::from_json(const std::string& path) {
  std::ifstream file(path);
  if (!file)
    throw op_error<IOError>("ClusterSpec",
                            "expected a readable JSON file, "
                            "could not open \"",
                            path, "\"");
  std::map<std::string, std::vector<std::string>> jobs;
  try {
    // nlohmann keeps the last of two equal keys: refused, as a job listed
    // twice is a mistake whichever list was meant.
    const auto refuse_repeated_jobs = [&jobs](
                                          int depth,
                                          nlohmann::json::parse_event_t event,
                                          nlohmann::json& parsed) {
      if (event == nlohmann::json::parse_event_t::key && depth == 1 &&
          !jobs.emplace(parsed.get<std::string>(), std::vector<std::string>())
               .second)
        throw std::invalid_argument("the job \"" + parsed.get<std::string>() +
                                    "\" twice");
      return true;
    };
    const auto json = nlohmann::json::parse(file, refuse_repeated_jobs);
    if (!json.is_object()) throw std::invalid_argument("not an object");
    for (const auto& [name, tasks] : json.items())
      jobs[name] = tasks.get<std::vector<std::string>>();
  } catch (const std::exception& e) {
    throw op_error<ValueError>("ClusterSpec",
                               "expected {\"job\": [\"host:port\", "
                               "...], ...} in \"",
                               path, "\", got: ", e.what());
  }
  return ClusterSpec(std::move(jobs));
}

ClusterSpec ClusterSpec::from_flags(const std::string& ps_hosts,
                                    const std::string& worker_hosts) {
  std::map<std::string, std::vector<std::string>> jobs;
  if (auto ps = split_hosts(ps_hosts); !ps.empty()) jobs["ps"] = ps;
  if (auto workers = split_hosts(worker_hosts); !workers.empty())
    jobs["worker"] = workers;
  return ClusterSpec(std::move(jobs));
}

ClusterSpec ClusterSpec::from_world(int num_ps) {
  const int size = world().size();
  if (num_ps < 1 || num_ps >= size)
    throw op_error<ValueError>("ClusterSpec", "expected 1 <= num_ps < ", size,
                               " (the ranks, a worker at least), got ", num_ps);
  std::map<std::string, std::vector<std::string>> jobs;
  for (int r = 0; r < size; ++r)
    jobs[r < num_ps ? "ps" : "worker"].push_back("rank" + std::to_string(r));
  return ClusterSpec(std::move(jobs));
}

std::vector<std::string> ClusterSpec::jobs() const {
  std::vector<std::string> names;
  for (const char* first : {"ps", "worker"})
    if (jobs_.count(first)) names.push_back(first);
  for (const auto& [name, tasks] : jobs_)
    if (name != "ps" && name != "worker") names.push_back(name);
  return names;
}

int ClusterSpec::num_tasks(const std::string& job) const {
  const auto it = jobs_.find(job);
  return it == jobs_.end() ? 0 : static_cast<int>(it->second.size());
}

const std::vector<std::string>& ClusterSpec::job_tasks(
    const std::string& job) const {
  const auto it = jobs_.find(job);
  if (it == jobs_.end())
    throw op_error<ValueError>("ClusterSpec",
                               "expected a job of the cluster, "
                               "got \"",
                               job, "\"");
  return it->second;
}

int ClusterSpec::size() const {
  int n = 0;
  for (const auto& [name, tasks] : jobs_) n += static_cast<int>(tasks.size());
  return n;
}

TaskSpec ClusterSpec::task_of_rank(int rank) const {
  int first = 0;
  for (const std::string& job : jobs()) {
    const int n = num_tasks(job);
    if (rank >= first && rank < first + n) return {job, rank - first};
    first += n;
  }
  throw op_error<ValueError>("ClusterSpec", "expected a rank in [0, ", size(),
                             "), got ", rank);
}

int ClusterSpec::rank_of(const TaskSpec& task) const {
  int first = 0;
  for (const std::string& job : jobs()) {
    if (job == task.job_name && task.task_index >= 0 &&
        task.task_index < num_tasks(job))
      return first + task.task_index;
    first += num_tasks(job);
  }
  throw op_error<ValueError>("ClusterSpec",
                             "expected a task of the cluster, "
                             "got ",
                             describe(task));
}

Server::Server(ClusterSpec cluster, TaskSpec task)
    : state_(std::make_shared<detail::ServerState>()) {
  constexpr const char* kOp = "Server";
  Communicator& w = world();
  if (cluster.size() != w.size())
    throw op_error<ValueError>(
        kOp, "expected ", cluster.size(), " ranks for the cluster (",
        cluster.num_tasks("ps"), " ps, ", cluster.num_tasks("worker"),
        " workers), got ", w.size());
  const TaskSpec mine = cluster.task_of_rank(w.rank());
  const bool given = !task.job_name.empty() || task.task_index >= 0;
  if (given &&
      (task.job_name != mine.job_name || task.task_index != mine.task_index))
    throw op_error<ValueError>(kOp, "expected ", describe(mine),
                               " for MPI rank ", w.rank(),
                               " (ps tasks first), got ", describe(task));
  if (cluster.num_tasks("worker") == 0)
    throw op_error<ValueError>(kOp, "expected a cluster with a worker job");
  state_->cluster = std::move(cluster);
  state_->task = mine;
}

Server::Server(std::shared_ptr<detail::ServerState> state)
    : state_(std::move(state)) {}

Server Server::create_local_server() {
  auto state = std::make_shared<detail::ServerState>();
  std::map<std::string, std::vector<std::string>> jobs;
  jobs["worker"] = {"localhost"};
  state->cluster = ClusterSpec(std::move(jobs));
  state->task = {"worker", 0};
  state->local = true;
  return Server(std::move(state));
}

const std::string& Server::job_name() const {
  return state_->task.job_name;
}
int Server::task_index() const {
  return state_->task.task_index;
}
bool Server::is_chief() const {
  return state_->task.job_name == "worker" && state_->task.task_index == 0;
}
bool Server::is_local() const {
  return state_->local;
}
const ClusterSpec& Server::cluster() const {
  return state_->cluster;
}

int Server::join() {
  if (state_->serve.empty())
    throw op_error<ValueError>("join",
                               "expected a ParameterClient created on "
                               "this ",
                               job_name(), " task before join()");
  for (const auto& serve : state_->serve) serve();
  state_->serve.clear();
  return 0;
}

}  // namespace tapeflow::dist
