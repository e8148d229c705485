// A small data-parallel training job for the fault tests: it checkpoints
// every step (rank 0 writes), resumes from the latest checkpoint, and can
// fail on purpose in its first run (TPF_RUN_GENERATION unset or 0):
//   TPF_TEST_KILL=r:s  rank r SIGKILLs itself before step s
//   TPF_TEST_STOP=r:s  rank r SIGSTOPs itself before step s (a hung rank)
//   TPF_TEST_PLAIN=1   gradients averaged by plain all_reduce calls, no DDP
// Rank 0 prints "final <hash>" of the parameters at the end.
//   mpirun -np 3 fault_job <checkpoint dir> <steps>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>

#include "tapeflow/dist.hpp"
#include "tapeflow/io/checkpoint.hpp"
#include "tapeflow/tapeflow.hpp"

namespace tpf = tapeflow;
namespace dist = tpf::dist;

namespace {

/** The signal `var` asks this rank to raise before `step`, or 0. */
int planned_signal(const char* var, int sig, int rank, int64_t step) {
  const char* generation = std::getenv("TPF_RUN_GENERATION");
  if (generation != nullptr && std::string(generation) != "0") return 0;
  const char* plan = std::getenv(var);
  int r = -1;
  long long s = -1;
  if (plan == nullptr || std::sscanf(plan, "%d:%lld", &r, &s) != 2) return 0;
  return r == rank && s == step ? sig : 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: fault_job <checkpoint dir> <steps>\n");
    return 2;
  }
  const std::string dir = argv[1];
  const int64_t steps = std::atoll(argv[2]);
  tpf::config::set_intra_op_threads(1);
  auto& world = dist::world();
  const int n = world.size();

  std::vector<tpf::Variable> params = {
      tpf::Variable(tpf::stateless_random_normal({8, 16}, 1, 0, 0.3)),
      tpf::Variable(tpf::zeros({16})),
      tpf::Variable(tpf::stateless_random_normal({16, 1}, 2, 0, 0.3))};
  tpf::optim::Adam opt(1e-2);
  opt.build(params);
  tpf::train::NamedVariables named;
  for (const char* name : {"w0", "b0", "w1"})
    named.emplace_back(name, params[named.size()]);
  tpf::train::Checkpoint ckpt(named, opt.slots(), 3);
  int64_t start = 0;
  if (const auto path = tpf::train::latest_checkpoint(dir); !path.empty()) {
    ckpt.restore(path);
    start = ckpt.step();
    opt.set_iterations(start);
  }
  const bool plain = std::getenv("TPF_TEST_PLAIN") != nullptr;
  std::optional<dist::DistributedDataParallel> ddp;
  if (!plain) ddp.emplace(params);

  for (int64_t step = start; step < steps; ++step) {
    for (const auto& [var, sig] : {std::pair{"TPF_TEST_KILL", SIGKILL},
                                   std::pair{"TPF_TEST_STOP", SIGSTOP}})
      if (const int s = planned_signal(var, sig, world.rank(), step)) raise(s);
    dist::manual_seed_step(11, step);
    const auto x = tpf::stateless_random_normal({6 * n, 8}, 100 + step);
    const auto y = tpf::stateless_random_normal({6 * n, 1}, 200 + step);
    const auto xs = tpf::slice(x, {6 * world.rank(), 0}, {6, 8});
    const auto ys = tpf::slice(y, {6 * world.rank(), 0}, {6, 1});
    tpf::GradientTape tape;
    auto h = tpf::nn::dropout(
        tpf::nn::relu(tpf::matmul(xs, params[0]) + params[1]), 0.2);
    const auto loss =
        tpf::nn::mean_squared_error(ys, tpf::matmul(h, params[2]));
    std::vector<tpf::Tensor> grads;
    if (plain) {
      grads = tape.gradient(loss, {params.begin(), params.end()});
      for (const auto& g : grads) world.all_reduce(g, dist::ReduceOp::mean);
    } else {
      grads = ddp->gradient(tape, loss);
    }
    opt.apply_gradients(grads, params);
    ckpt.set_step(step + 1);
    if (world.rank() == 0) ckpt.save(dir);  // data parallel: rank 0 writes
  }
  if (ddp) ddp->check_replicas();
  if (world.rank() == 0) {
    uint64_t h = 1469598103934665603ULL;
    for (const auto& p : params)
      for (float v : p.to_vector<float>()) {
        uint32_t bits;
        std::memcpy(&bits, &v, sizeof bits);
        h = (h ^ bits) * 1099511628211ULL;
      }
    std::printf("final %016llx\n", static_cast<unsigned long long>(h));
  }
  return 0;
}
