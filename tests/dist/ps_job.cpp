// A parameter-server job for the fault test: 1 ps + 2 workers fit
// Y = 2X + 10 asynchronously; the chief commits a checkpoint every 20
// global steps, and a restarted job resumes from the last committed one.
// In the first run (TPF_RUN_GENERATION unset or 0) TPF_TEST_KILL=w:i makes
// worker w SIGKILL itself before its own i-th push, TPF_TEST_STOP=w:i
// SIGSTOP itself (a hung worker).
//   mpirun -np 3 ps_job <checkpoint dir> <global steps>
#include <unistd.h>

#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "tapeflow/dist.hpp"
#include "tapeflow/tapeflow.hpp"

namespace tpf = tapeflow;
namespace dist = tpf::dist;

namespace {

bool planned(const char* var, int worker, int64_t iteration) {
  const char* generation = std::getenv("TPF_RUN_GENERATION");
  if (generation != nullptr && std::string(generation) != "0") return false;
  const char* plan = std::getenv(var);
  int w = -1;
  long long s = -1;
  return plan != nullptr && std::sscanf(plan, "%d:%lld", &w, &s) == 2 &&
         w == worker && iteration == s;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: ps_job <checkpoint dir> <global steps>\n");
    return 2;
  }
  const int64_t steps = std::atoll(argv[2]);
  dist::Server server(dist::ClusterSpec::from_world(1));
  tpf::Variable w(tpf::zeros({1, 1})), b(tpf::zeros({1}));
  dist::ParameterClient ps(server, {.checkpoint_dir = argv[1]});
  ps.create({{"w", w}, {"b", b}},
            [] { return std::make_unique<tpf::optim::SGD>(0.2); });
  if (server.job_name() == "ps") return server.join();
  if (server.is_chief())
    std::printf("resumed from step %lld\n",
                static_cast<long long>(ps.resumed_step()));
  const std::vector<tpf::Variable> params = {w, b};
  int64_t last_saved = ps.resumed_step();
  for (int64_t i = 0;; ++i) {
    ps.pull(params);
    const int64_t step = ps.global_step();
    if (step >= steps) break;
    if (planned("TPF_TEST_KILL", server.task_index(), i)) std::raise(SIGKILL);
    if (planned("TPF_TEST_STOP", server.task_index(), i)) std::raise(SIGSTOP);
    if (server.is_chief() && step - last_saved >= 20) {
      ps.save();
      last_saved = step;
    }
    const auto x = tpf::stateless_random_uniform(
        {16, 1}, 1000 * server.task_index() + uint64_t(i) + 7 * uint64_t(step));
    tpf::GradientTape tape;
    const auto loss =
        tpf::mean(tpf::square(tpf::matmul(x, w) + b - (x * 2.0 + 10.0)));
    ps.push(tape.gradient(loss, {w, b}));
    usleep(2000);  // steps of a real job's length, in both workers
  }
  ps.done();
  const double wv = w.item<double>(), bv = b.item<double>();
  if (server.is_chief())
    std::printf("final Y = %.4f X + %.4f at step %lld\n", wv, bv,
                static_cast<long long>(ps.global_step()));
  return std::abs(wv - 2.0) < 0.05 && std::abs(bv - 10.0) < 0.05 ? 0 : 1;
}
