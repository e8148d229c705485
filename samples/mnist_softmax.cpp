// Softmax regression on Fashion-MNIST: 784 -> 10, SGD 0.5, batch 100.
#include "common/models.hpp"
#include "common/trainer.hpp"
#ifdef TAPEFLOW_SAMPLES_DIST
#include "common/parameter_servers.hpp"
#endif

namespace nn = tapeflow::nn;

int main(int argc, char** argv) {
  CLI::App app{"Softmax regression on Fashion-MNIST (or MNIST: --data-dir)"};
  samples::TrainConfig config;
  config.lr = 0.5;
  config.batch_size = 100;
  samples::add_flags(app, config);
  int num_ps = 0;
  bool sync_replicas = false;
  app.add_option("--ps", num_ps,
                 "parameter servers among the ranks of mpirun (the rest are "
                 "workers)");
  app.add_flag("--sync-replicas", sync_replicas,
               "with --ps: aggregate every worker's gradients per step");
  int num_workers = 0;
  app.add_option("--workers", num_workers,
                 "with --ps: the workers (must be mpirun's ranks minus --ps)");
  CLI11_PARSE(app, argc, argv);
  try {
    if (num_ps > 0) {
#ifdef TAPEFLOW_SAMPLES_DIST
      samples::setup_parameter_servers(config, num_ps, num_workers,
                                       sync_replicas);
#else
      throw tapeflow::ValueError(
          "[--ps] this build has no tpf::dist (Open MPI was not found when it "
          "was configured)");
#endif
    }
    nn::Sequential model = samples::mnist_softmax();
    tapeflow::optim::SGD sgd(config.lr);
    return samples::train("mnist_softmax", model, sgd, config);
  } catch (const tapeflow::Error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 2;
  }
}
