#pragma once
// The training loop the MNIST samples share: shuffled mini-batches, one
// optimizer step each, a progress bar, per-epoch test accuracy, checkpoints
// (--checkpoint-dir, --resume) and a clean stop on Ctrl-C, on the CPU or a
// GPU (--device).
#include <sys/resource.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <functional>
#include <random>
#include <string>
#include <tapeflow/tapeflow.hpp>
#include <tuple>

#include "common/device.hpp"
#include "common/interrupt.hpp"
#include "common/progress.hpp"
#include "common/training_log.hpp"

namespace samples {

namespace tpf = tapeflow;

/**
 * How a data-parallel run plugs into train() (common/distributed.hpp sets
 * it up): this rank's slice of each global batch, the gradient averaged over
 * the ranks, and the seeding that keeps shuffles equal on every rank while
 * dropout differs per rank.
 */
struct Replication {
  int rank = 0;
  int ranks = 1;
  std::function<std::vector<tpf::Tensor>(tpf::GradientTape&, const tpf::Tensor&,
                                         const std::vector<tpf::Variable>&)>
      gradient;
  /** Before an epoch's shuffle (step -1) and before each step. */
  std::function<void(int64_t epoch, int64_t step)> reseed;
  /**
   * Once the model is built: parameter servers start here, and a ps task
   * serves until the workers are done and returns true (no training).
   */
  std::function<bool(tpf::nn::Module& model)> start;
  /** Applies a step's gradients instead of the local optimizer. */
  std::function<void(const std::vector<tpf::Tensor>& grads,
                     const std::vector<tpf::Variable>& params)>
      apply;
};

struct TrainConfig {
  int epochs = 2;
  int64_t batch_size = 64;
  double lr = 1e-3;
  int threads = 0;  // 0: all cores
  std::string data_dir = tpf::io::kDefaultMnistDir;
  std::string checkpoint_dir;
  bool resume = false;
  int64_t train_limit = 0;  // > 0: only the first n training images
  int64_t seed = -1;        // >= 0: weights, shuffles and dropout repeat
  std::string precision = "highest";
  std::string device = "cpu";  // cpu or cuda:N (--device)
  bool distributed = false;
  std::string logdir;   // TensorBoard event files (rank 0)
  std::string profile;  // Chrome-trace file of every op (rank 0)
  Replication replication;
};

/** The flags every MNIST sample takes. */
inline void add_flags(CLI::App& app, TrainConfig& c) {
  app.add_option("--epochs", c.epochs, "passes over the training set")
      ->capture_default_str();
  app.add_option("--batch-size", c.batch_size, "images per step")
      ->capture_default_str();
  app.add_option("--lr", c.lr, "learning rate")->capture_default_str();
  app.add_option("--threads", c.threads, "CPU threads (0: all cores)")
      ->capture_default_str();
  app.add_option("--data-dir", c.data_dir, "directory of the IDX files")
      ->capture_default_str();
  app.add_option("--checkpoint-dir", c.checkpoint_dir,
                 "save a checkpoint here after each epoch and on Ctrl-C");
  app.add_flag("--resume", c.resume, "continue from the latest checkpoint");
  app.add_option("--train-limit", c.train_limit,
                 "use only the first n training images");
  app.add_option("--seed", c.seed,
                 "random seed (default: a different run every time)");
  app.add_option("--precision", c.precision,
                 "float32 matmul and convolution precision: highest, or "
                 "medium for bfloat16 products where the CPU has them")
      ->check(CLI::IsMember({"highest", "high", "medium"}))
      ->capture_default_str();
  app.add_option("--logdir", c.logdir,
                 "write TensorBoard summaries here: loss, learning rate, test "
                 "accuracy, weight histograms, input images");
  app.add_option("--profile", c.profile,
                 "profile every op of the training: a Chrome trace to this "
                 "file and a table per op");
  app.add_option("--device", c.device, kDeviceHelp)->capture_default_str();
}

inline double peak_rss_mb() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss / 1024.0;
}

/**
 * Fraction of `data` the model (in inference mode, on `device`) classifies
 * correctly.
 */
inline double accuracy(tpf::nn::Module& model, const tpf::io::MnistBytes& data,
                       tpf::Device device) {
  tpf::NoGradGuard no_grad;
  const bool was_training = model.is_training();
  model.eval();
  const int64_t n = data.size();
  int64_t correct = 0;
  constexpr int64_t kBatch = 250;  // activations of a bigger batch cost RSS
  for (int64_t begin = 0; begin < n; begin += kBatch) {
    const int64_t size = std::min<int64_t>(kBatch, n - begin);
    const auto x = data.images(begin, size).to(device);
    const auto y = tpf::slice(data.labels, {begin}, {size}).to(device);
    correct +=
        tpf::sum(tpf::equal(tpf::argmax(model(x), 1), y)).item<int64_t>();
  }
  model.train(was_training);
  // The bigger evaluation batches left blocks of sizes that training does
  // not reuse: hand them back rather than keep them for the whole run.
  tpf::empty_cache();
  return double(correct) / double(n);
}

using Batch = std::tuple<tpf::Tensor, tpf::Tensor>;  // images, labels

/**
 * An epoch's (images, labels) batches: step s takes `rows` images from
 * position s * stride + offset of `order`. On the CPU each batch is drawn
 * when the step asks for it; on another device the pipeline's thread draws
 * the next ones and copies them there while the step computes.
 */
inline tpf::data::Dataset<Batch> epoch_batches(const tpf::io::MnistBytes& set,
                                               const tpf::Tensor& order,
                                               int64_t steps, int64_t stride,
                                               int64_t offset, int64_t rows,
                                               tpf::Device device) {
  const auto batches = tpf::data::range(steps).map(
      [&set, order, stride, offset, rows](const tpf::Tensor& s) {
        const auto idx =
            tpf::slice(order, {s.item<int64_t>() * stride + offset}, {rows});
        return Batch{set.images(idx), tpf::gather(set.labels, idx)};
      });
  return device.is_cpu() ? batches : batches.prefetch_to_device(device, 2);
}

/** Trains `model` with `optimizer` as `c` says; returns the exit status. */
inline int train(const std::string& title, tpf::nn::Module& model,
                 tpf::optim::Optimizer& optimizer, const TrainConfig& c) {
  const tpf::Device device = checked_device(c.device);
  if (c.threads > 0) tpf::config::set_intra_op_threads(c.threads);
  tpf::config::set_float32_matmul_precision(c.precision);
  install_interrupt_handler();
  // Without --seed one process makes a different run every time (the
  // library's generator starts from a fixed seed, as PyTorch's); the header
  // prints the seed that repeats it. Ranks given none keep that fixed seed:
  // their shuffles must agree.
  if (c.seed >= 0 || c.replication.ranks == 1)
    tpf::manual_seed(c.seed >= 0 ? static_cast<uint64_t>(c.seed)
                                 : std::random_device{}() >> 1);
  const uint64_t seed = tpf::get_rng_state().seed;
  // Pixels stay bytes (47 MB for Fashion-MNIST's training set, not 188 MB of
  // float32); each batch is converted as it is drawn.
  const auto train_set = tpf::io::load_mnist_bytes(c.data_dir, "train");
  const auto test_set = tpf::io::load_mnist_bytes(c.data_dir, "t10k");
  const int64_t n = c.train_limit > 0
                        ? std::min(c.train_limit, train_set.size())
                        : train_set.size();
  const int64_t steps_per_epoch = n / c.batch_size;
  const Replication& rep = c.replication;
  const int64_t local_batch = c.batch_size / rep.ranks;
  {
    // Builds the weights from one batch's shape, on that batch's device.
    tpf::NoGradGuard no_grad;
    model(train_set.images(0, std::min(c.batch_size, n)).to(device));
  }
  std::printf(
      "%s: %lld training and %lld test images, %lld parameters, %s, %d "
      "threads, %s float32 precision, %d rank%s, seed %llu\n",
      title.c_str(), static_cast<long long>(n),
      static_cast<long long>(test_set.size()),
      static_cast<long long>(model.count_params()), device.str().c_str(),
      tpf::config::intra_op_threads(), c.precision.c_str(), rep.ranks,
      rep.ranks == 1 ? "" : "s", static_cast<unsigned long long>(seed));

  auto params = model.parameters();
  optimizer.build(params);
  if (rep.start && rep.start(model)) return 0;
  tpf::train::Checkpoint checkpoint(model.named_variables(), optimizer.slots(),
                                    3);
  if (c.resume && !c.checkpoint_dir.empty()) {
    const std::string latest = tpf::train::latest_checkpoint(c.checkpoint_dir);
    if (!latest.empty()) {
      checkpoint.restore(latest);
      optimizer.set_iterations(checkpoint.step());
      // The checkpoint's generator state goes on from its own seed.
      std::printf("resumed from %s (step %lld), seed %llu\n", latest.c_str(),
                  static_cast<long long>(checkpoint.step()),
                  static_cast<unsigned long long>(tpf::get_rng_state().seed));
    }
  }
  const auto save = [&] {
    if (c.checkpoint_dir.empty() || rep.rank != 0) return;
    checkpoint.set_step(optimizer.iterations());
    std::printf("saved %s\n", checkpoint.save(c.checkpoint_dir).c_str());
  };

  const bool chief = rep.rank == 0;
  TrainingLog log(chief ? c.logdir : "", chief ? c.profile : "");
  log.images("train/images", train_set.images(0, std::min<int64_t>(3, n)),
             optimizer.iterations());
  model.train();
  double seconds = 0;
  int64_t images = 0;
  double test_accuracy = 0;
  for (int epoch =
           int(optimizer.iterations() / std::max<int64_t>(steps_per_epoch, 1));
       epoch < c.epochs; ++epoch) {
    if (rep.reseed) rep.reseed(epoch, -1);
    const auto order = tpf::shuffle(tpf::arange(int64_t{0}, n));
    Progress progress(
        "epoch " + std::to_string(epoch + 1) + "/" + std::to_string(c.epochs),
        steps_per_epoch, c.batch_size);
    double running = 0;
    auto batches =
        epoch_batches(train_set, order, steps_per_epoch, c.batch_size,
                      rep.rank * local_batch, local_batch, device)
            .make_iterator();
    for (int64_t step = 0; step < steps_per_epoch; ++step) {
      if (rep.reseed) rep.reseed(epoch, optimizer.iterations());
      const auto [x, y] = *batches.get_next();
      tpf::GradientTape tape;
      const auto loss = tpf::mean(
          tpf::nn::sparse_softmax_cross_entropy_with_logits(y, model(x)));
      const auto grads = rep.gradient ? rep.gradient(tape, loss, params)
                                      : tape.gradient(loss, params);
      if (rep.apply)
        rep.apply(grads, params);
      else
        optimizer.apply_gradients(grads, params);
      const double value = loss.item<double>();
      log.step(optimizer.iterations(), value, optimizer.learning_rate());
      running = step == 0 ? value : 0.95 * running + 0.05 * value;
      progress.update(step + 1, running);
      images += c.batch_size;
      if (interrupted()) {
        seconds += progress.finish();
        std::printf("interrupted at step %lld\n",
                    static_cast<long long>(optimizer.iterations()));
        save();
        log.finish();
        return 130;
      }
    }
    seconds += progress.finish();
    test_accuracy = accuracy(model, test_set, device);
    log.epoch(optimizer.iterations(), "test/accuracy", test_accuracy, model);
    std::printf("epoch %d: loss %.4f, test accuracy %.2f%%\n", epoch + 1,
                running, 100 * test_accuracy);
    save();
  }
  log.finish();
  std::printf(
      "final: test accuracy %.2f%%, %.0f images/s over %.1f s, peak RSS %.0f "
      "MB\n",
      100 * test_accuracy, seconds > 0 ? images / seconds : 0.0, seconds,
      peak_rss_mb());
  return 0;
}

}  // namespace samples
