// Fits Y = 2X + 10 with gradient descent: the smallest complete training loop.
// --device cuda:0 runs it on a GPU: the data and the variables are made
// inside a DeviceScope, so every op of the step runs there.
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>
#include <tapeflow/summary.hpp>
#include <tapeflow/tapeflow.hpp>

#include "common/device.hpp"

namespace tpf = tapeflow;

namespace {

/** Trains for `steps` on `device`; returns the exit status. */
int fit(int steps, double lr, const std::string& logdir, tpf::Device device) {
  tpf::DeviceScope scope(device);
  tpf::manual_seed(0);
  const auto x = tpf::random_uniform({1000, 1}, -1.f, 1.f);
  const auto y = 2.0 * x + 10.0 + tpf::random_normal({1000, 1}, 0.f, 0.1f);

  tpf::Variable w(tpf::zeros({1, 1}));
  tpf::Variable b(tpf::zeros({1}));
  std::unique_ptr<tpf::summary::FileWriter> writer;
  if (!logdir.empty())
    writer = std::make_unique<tpf::summary::FileWriter>(logdir);
  for (int step = 1; step <= steps; ++step) {
    tpf::GradientTape tape;
    const auto loss = tpf::mean(tpf::square(tpf::matmul(x, w) + b - y));
    const auto g = tape.gradient(loss, {w, b});
    w.assign_sub(g[0] * lr);
    b.assign_sub(g[1] * lr);
    if (writer) {
      writer->scalar("loss", loss, step);
      writer->scalar("w", w, step);
      writer->scalar("b", b, step);
    }
    if (step % 50 == 0 || step == steps)
      std::cout << "step " << step << "  loss " << loss.item<double>() << "\n";
  }
  const double wv = w.item<double>(), bv = b.item<double>();
  std::cout << "fitted Y = " << wv << " X + " << bv << "  (true: Y = 2 X + 10"
            << ", on " << device << ")\n";
  return std::abs(wv - 2.0) < 0.05 && std::abs(bv - 10.0) < 0.05 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  int steps = 200;
  double lr = 0.1;
  std::string logdir;
  std::string device = "cpu";
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help") {
      std::cout
          << "usage: linear_regression [--steps N] [--lr RATE] [--logdir DIR]"
             " [--device cpu|cuda:N]\n"
             "Fits Y = 2X + 10 on 1000 noisy points by gradient descent;\n"
             "--logdir writes the loss, w and b for TensorBoard; --device:\n"
          << samples::kDeviceHelp << " (default cpu).\n";
      return 0;
    }
    if (arg == "--steps" && i + 1 < argc) {
      steps = std::atoi(argv[++i]);
    } else if (arg == "--lr" && i + 1 < argc) {
      lr = std::atof(argv[++i]);
    } else if (arg == "--logdir" && i + 1 < argc) {
      logdir = argv[++i];
    } else if (arg == "--device" && i + 1 < argc) {
      device = argv[++i];
    } else {
      std::cerr << "unknown argument " << arg << " (see --help)\n";
      return 2;
    }
  }

  try {
    return fit(steps, lr, logdir, samples::checked_device(device));
  } catch (const tpf::Error& e) {
    std::cerr << e.what() << "\n";
    return 2;
  }
}
