// A soft-margin linear SVM: hinge loss plus an L2 penalty, trained by
// gradient descent on the 2-D points in samples/data/svm_points.csv, on the
// CPU or a GPU (--device).
#include <CLI/CLI.hpp>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <tapeflow/summary.hpp>
#include <tapeflow/tapeflow.hpp>

#include "common/device.hpp"

namespace tpf = tapeflow;

namespace {

struct Points {
  tpf::Tensor x;       // (n, 2) float32
  tpf::Tensor labels;  // (n, 1) float32, 0 or 1
};

Points read_csv(const std::string& path) {
  std::ifstream in(path);
  if (!in)
    throw tpf::IOError("[svm] expected a readable CSV file, got " + path);
  std::string line;
  std::getline(in, line);  // header
  std::vector<float> xs, labels;
  while (std::getline(in, line)) {
    std::istringstream row(line);
    std::string a, b, c;
    if (!std::getline(row, a, ',') || !std::getline(row, b, ',') ||
        !std::getline(row, c))
      throw tpf::IOError("[svm] expected rows x1,x2,label in " + path +
                         ", got \"" + line + "\"");
    xs.push_back(std::stof(a));
    xs.push_back(std::stof(b));
    labels.push_back(std::stof(c));
  }
  const int64_t n = static_cast<int64_t>(labels.size());
  return {tpf::from_vector(xs, {n, 2}), tpf::from_vector(labels, {n, 1})};
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "Soft-margin linear SVM (hinge loss + L2) on a small 2-D dataset"};
  std::string data = SAMPLES_DATA_DIR "/svm_points.csv";
  int epochs = 300;
  double lr = 0.1, c = 0.01;
  app.add_option("--data", data, "CSV file with x1,x2,label rows")
      ->capture_default_str();
  app.add_option("--epochs", epochs, "full-batch gradient steps")
      ->capture_default_str();
  app.add_option("--lr", lr, "learning rate")->capture_default_str();
  app.add_option("--l2", c, "weight of the L2 penalty")->capture_default_str();
  std::string logdir;
  app.add_option("--logdir", logdir,
                 "write the loss and the accuracy for TensorBoard here");
  std::string device_name = "cpu";
  app.add_option("--device", device_name, samples::kDeviceHelp)
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  try {
    const tpf::Device device = samples::checked_device(device_name);
    Points p = read_csv(data);
    p.x = p.x.to(device);
    p.labels = p.labels.to(device);
    // The variables and the constants of each step are made on the device.
    tpf::DeviceScope scope(device);
    tpf::Variable w(tpf::zeros({2, 1}));
    tpf::Variable b(tpf::zeros({1}));
    std::unique_ptr<tpf::summary::FileWriter> writer;
    if (!logdir.empty())
      writer = std::make_unique<tpf::summary::FileWriter>(logdir);
    const auto training_accuracy = [&] {
      tpf::NoGradGuard no_grad;
      const auto predicted = tpf::matmul(p.x, w) + b > tpf::scalar(0.f);
      return tpf::mean(tpf::equal(predicted, p.labels > tpf::scalar(0.5f)))
          .item<double>();
    };
    double loss_value = 0;
    for (int epoch = 1; epoch <= epochs; ++epoch) {
      tpf::GradientTape tape;
      const auto scores = tpf::matmul(p.x, w) + b;
      const auto loss = tpf::mean(tpf::nn::hinge_loss(p.labels, scores)) +
                        c * tpf::nn::l2_loss(w);
      const auto g = tape.gradient(loss, {w, b});
      w.assign_sub(g[0] * lr);
      b.assign_sub(g[1] * lr);
      loss_value = loss.item<double>();
      if (writer) {
        writer->scalar("loss", loss_value, epoch);
        writer->scalar("accuracy", training_accuracy(), epoch);
      }
      if (epoch % 100 == 0 || epoch == epochs)
        std::cout << "epoch " << epoch << "  loss " << loss_value << "\n";
    }
    const double accuracy = training_accuracy();
    const auto wv = w.to_vector<float>();
    std::cout << "w = (" << wv[0] << ", " << wv[1]
              << "), b = " << b.item<float>() << ", training accuracy "
              << accuracy * 100 << "% on " << device << "\n";
    return accuracy > 0.85 ? 0 : 1;
  } catch (const tpf::Error& e) {
    std::cerr << e.what() << "\n";
    return 2;
  }
}
