// Softmax regression on Fashion-MNIST: 784 -> 10, SGD 0.5, batch 100.
#include "common/models.hpp"
#include "common/trainer.hpp"

namespace nn = tapeflow::nn;

int main(int argc, char** argv) {
  CLI::App app{"Softmax regression on Fashion-MNIST (or MNIST: --data-dir)"};
  samples::TrainConfig config;
  config.lr = 0.5;
  config.batch_size = 100;
  samples::add_flags(app, config);
  CLI11_PARSE(app, argc, argv);
  try {
    nn::Sequential model = samples::mnist_softmax();
    tapeflow::optim::SGD sgd(config.lr);
    return samples::train("mnist_softmax", model, sgd, config);
  } catch (const tapeflow::Error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 2;
  }
}
