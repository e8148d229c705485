// The libtorch peer of samples/mnist_cnn.cpp for tools/compare_mnist_cnn.py:
// the same model (conv5x5x32 - relu - maxpool2 - conv5x5x64 - relu - maxpool2
// - dense 1024 - relu - dropout 0.5 - dense 10), Adam 1e-3, batch 64, a fresh
// shuffle per epoch, PyTorch's default initializers, and the same report
// lines as the tapeflow sample (test accuracy per epoch, images/s, peak RSS).
// The images stay uint8 and each batch is converted to float32, as there.
#include <ATen/autocast_mode.h>
#include <sys/resource.h>
#include <torch/torch.h>
#include <zlib.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "cnn_model.hpp"

namespace {

/** The bytes of a gzip-compressed (or plain) file. */
std::vector<uint8_t> read_file(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f) throw std::runtime_error("cannot open " + path);
  std::vector<uint8_t> out;
  uint8_t buf[1 << 16];
  int got;
  while ((got = gzread(f, buf, sizeof buf)) > 0)
    out.insert(out.end(), buf, buf + got);
  gzclose(f);
  return out;
}

uint32_t big_endian(const uint8_t* p) {
  return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 |
         p[3];
}

struct Split {
  torch::Tensor images;  // uint8 N x 1 x 28 x 28
  torch::Tensor labels;  // int64 N
};

/** One split of an IDX data set; "<dir>/<split>-{images-idx3,labels-idx1}". */
Split load(const std::string& dir, const std::string& split) {
  const auto images = read_file(dir + "/" + split + "-images-idx3-ubyte.gz");
  const auto labels = read_file(dir + "/" + split + "-labels-idx1-ubyte.gz");
  if (images.size() < 16 || big_endian(images.data()) != 0x803 ||
      labels.size() < 8 || big_endian(labels.data()) != 0x801)
    throw std::runtime_error("not an MNIST IDX pair in " + dir);
  const int64_t n = big_endian(images.data() + 4);
  const int64_t h = big_endian(images.data() + 8),
                w = big_endian(images.data() + 12);
  Split s;
  s.images = torch::empty({n, 1, h, w}, torch::kUInt8);
  std::memcpy(s.images.data_ptr(), images.data() + 16, size_t(n * h * w));
  s.labels = torch::from_blob(const_cast<uint8_t*>(labels.data() + 8), {n},
                              torch::kUInt8)
                 .to(torch::kInt64);
  return s;
}

torch::Tensor to_float(const torch::Tensor& images, bool channels_last) {
  auto x = images.to(torch::kFloat32).div_(255.0);
  return channels_last ? x.contiguous(torch::MemoryFormat::ChannelsLast) : x;
}

double accuracy(torch::nn::Sequential& model, const Split& test,
                bool channels_last) {
  torch::NoGradGuard no_grad;
  model->eval();
  const int64_t n = test.labels.size(0);
  int64_t correct = 0;
  for (int64_t begin = 0; begin < n; begin += 250) {
    const int64_t end = std::min<int64_t>(begin + 250, n);
    const auto x = to_float(test.images.slice(0, begin, end), channels_last);
    correct += model->forward(x)
                   .argmax(1)
                   .eq(test.labels.slice(0, begin, end))
                   .sum()
                   .item<int64_t>();
  }
  model->train();
  return double(correct) / double(n);
}

}  // namespace

int main(int argc, char** argv) {
  int epochs = 2, threads = 2;
  int64_t train_limit = 0;
  uint64_t seed = 0;
  bool channels_last = false, bf16_autocast = false;
  std::string dir = "/usr/share/datasets/fashion-mnist";
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool has_value = i + 1 < argc;
    if (a == "--epochs" && has_value) {
      epochs = std::stoi(argv[++i]);
    } else if (a == "--threads" && has_value) {
      threads = std::stoi(argv[++i]);
    } else if (a == "--train-limit" && has_value) {
      train_limit = std::stoll(argv[++i]);
    } else if (a == "--seed" && has_value) {
      seed = std::stoull(argv[++i]);
    } else if (a == "--data-dir" && has_value) {
      dir = argv[++i];
    } else if (a == "--channels-last") {
      channels_last = true;
    } else if (a == "--bf16-autocast") {
      bf16_autocast = true;
    } else {
      std::fprintf(stderr,
                   "usage: %s [--epochs N] [--threads N] [--train-limit N] "
                   "[--seed N] [--data-dir DIR] [--channels-last] "
                   "[--bf16-autocast]\n",
                   argv[0]);
      return 2;
    }
  }
  torch::set_num_threads(threads);
  // libtorch 1.13's bfloat16 products on CPU: conv and linear (and the ops
  // after them) run in bfloat16 under autocast, for training and evaluation.
  at::autocast::set_autocast_cpu_dtype(at::kBFloat16);
  at::autocast::set_cpu_enabled(bf16_autocast);
  torch::manual_seed(seed);
  const Split train = load(dir, "train"), test = load(dir, "t10k");

  torch::nn::Sequential model = samples::mnist_cnn_torch();
  if (channels_last) {  // the C++ Module::to takes no memory format
    torch::NoGradGuard no_grad;
    for (auto& p : model->parameters())
      if (p.dim() == 4)
        p.set_data(p.contiguous(torch::MemoryFormat::ChannelsLast));
  }
  torch::optim::Adam adam(model->parameters(), torch::optim::AdamOptions(1e-3));
  const int64_t all = train.labels.size(0);
  const int64_t n = train_limit > 0 ? std::min(train_limit, all) : all;
  const int64_t batch = 64, steps = n / batch;
  std::printf("mnist_cnn_torch: %lld training images, %d threads%s%s\n",
              static_cast<long long>(n), threads,
              channels_last ? ", channels-last" : "",
              bf16_autocast ? ", bfloat16 autocast" : "");

  double seconds = 0, acc = 0;
  int64_t images = 0;
  for (int epoch = 0; epoch < epochs; ++epoch) {
    const auto order = torch::randperm(n, torch::kInt64);
    const auto start = std::chrono::steady_clock::now();
    double running = 0;
    for (int64_t step = 0; step < steps; ++step) {
      const auto idx = order.slice(0, step * batch, (step + 1) * batch);
      const auto x = to_float(train.images.index_select(0, idx), channels_last);
      const auto y = train.labels.index_select(0, idx);
      adam.zero_grad();
      auto loss = torch::nn::functional::cross_entropy(model->forward(x), y);
      loss.backward();
      adam.step();
      const double value = loss.item<double>();
      running = step == 0 ? value : 0.95 * running + 0.05 * value;
      images += batch;
    }
    seconds +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    acc = accuracy(model, test, channels_last);
    std::printf("epoch %d: loss %.4f, test accuracy %.2f%%\n", epoch + 1,
                running, 100 * acc);
    std::fflush(stdout);
  }
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  std::printf(
      "final: test accuracy %.2f%%, %.0f images/s over %.1f s, peak RSS %.0f "
      "MB\n",
      100 * acc, seconds > 0 ? images / seconds : 0.0, seconds,
      usage.ru_maxrss / 1024.0);
  return 0;
}
