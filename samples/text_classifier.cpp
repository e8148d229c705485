// Text classification with an Embedding and an LSTM on sentences read as
// string tensors: TextLineDataset lines become tpf::string_ tensors, the
// pipeline splits them into label and words, lowers and tokenizes the words
// and maps them to ids through a vocabulary, then pads batches with id 0
// (masked by Embedding(mask_zero)). The data (samples/data/sentiment_*.txt)
// are short movie-review sentences, "pos" or "neg", where negation ("was not
// fun") and contrast ("... but the ending was superb") decide the label: a
// bag of words is not enough, word order matters.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <map>
#include <string>
#include <tapeflow/tapeflow.hpp>
#include <vector>

#include "common/cli.hpp"
#include "common/progress.hpp"

namespace tpf = tapeflow;
namespace nn = tapeflow::nn;
namespace data = tapeflow::data;
using tpf::Tensor;

namespace {

struct Options {
  std::string data_dir = SAMPLES_DATA_DIR;
  int epochs = 3;
  int64_t batch = 32;
  int64_t embedding = 32;
  int64_t units = 32;
  double learning_rate = 0.01;
  uint64_t seed = 7;
  double min_accuracy = 0.9;
  int threads = 0;
};

/** "label<TAB>text" lines as 0-d string tensors. */
data::Dataset<Tensor> lines(const std::string& path) {
  return data::TextLineDataset(path).map(
      [](const std::string& line) { return tpf::constant(line); });
}

/** A line's (label, text): tf.strings.split at the tab. */
std::pair<Tensor, Tensor> label_and_text(const Tensor& line) {
  const Tensor fields = tpf::strings::split(line, "\t");
  if (fields.numel() != 2)
    throw tpf::IOError("[text_classifier] expected \"label<TAB>text\", got " +
                       line.item<std::string>());
  return {tpf::slice(fields, {0}, {1}), tpf::slice(fields, {1}, {1})};
}

/** The words of a text tensor: lowered, split at whitespace. */
Tensor words_of(const Tensor& text) {
  return tpf::strings::split(tpf::strings::lower(tpf::reshape(text, {})));
}

/** Every word of the training file, in order of first appearance. */
tpf::strings::Vocabulary build_vocabulary(const std::string& path) {
  std::vector<std::string> tokens;
  std::map<std::string, bool> seen;
  for (const Tensor& line : lines(path))
    for (const std::string& w :
         words_of(label_and_text(line).second).to_strings())
      if (!seen[w]) {
        seen[w] = true;
        tokens.push_back(w);
      }
  return tpf::strings::Vocabulary(tokens);
}

/** (ids (batch, longest), labels (batch,)) batches of a file. */
data::Dataset<std::tuple<Tensor, Tensor>> examples(
    const std::string& path, const tpf::strings::Vocabulary& vocab) {
  return lines(path).map([vocab](const Tensor& line) {
    const auto [label, text] = label_and_text(line);
    const Tensor positive = tpf::equal(label, std::string("pos"));
    return std::tuple{vocab.lookup(words_of(text)),
                      tpf::reshape(tpf::cast(positive, tpf::int64), {})};
  });
}

double accuracy(nn::Sequential& model,
                const data::Dataset<std::tuple<Tensor, Tensor>>& batches) {
  tpf::NoGradGuard no_grad;
  model.eval();
  int64_t right = 0, total = 0;
  for (const auto& [ids, labels] : batches) {
    const Tensor predicted = tpf::argmax(model(ids), 1);
    right += tpf::sum(tpf::cast(tpf::equal(predicted, labels), tpf::int64))
                 .item<int64_t>();
    total += labels.numel();
  }
  model.train();
  return total ? static_cast<double>(right) / total : 0.0;
}

/** Trains `model` for o.epochs; returns the final test accuracy. */
double train_and_test(const std::string& name, nn::Sequential& model,
                      const Options& o,
                      const data::Dataset<std::tuple<Tensor, Tensor>>& train,
                      const data::Dataset<std::tuple<Tensor, Tensor>>& test,
                      int64_t steps) {
  tpf::optim::Adam adam({.learning_rate = o.learning_rate});
  double seconds = 0;
  for (int epoch = 1; epoch <= o.epochs; ++epoch) {
    samples::Progress progress(name + " epoch " + std::to_string(epoch), steps,
                               o.batch);
    int64_t step = 0;
    for (const auto& [ids, labels] : train) {
      const double loss =
          adam.minimize(
                  [&] {
                    return tpf::mean(
                        nn::sparse_softmax_cross_entropy_with_logits(
                            labels, model(ids)));
                  },
                  model.parameters())
              .item<double>();
      progress.update(++step, loss);
    }
    seconds += progress.finish();
    std::printf("%s epoch %d: test accuracy %.3f\n", name.c_str(), epoch,
                accuracy(model, test));
  }
  std::printf("%s: %.2f s per epoch\n", name.c_str(), seconds / o.epochs);
  return accuracy(model, test);
}

int run(const Options& o) {
  tpf::manual_seed(o.seed);
  const std::string train_path = o.data_dir + "/sentiment_train.txt";
  const std::string test_path = o.data_dir + "/sentiment_test.txt";
  const auto vocab = build_vocabulary(train_path);
  std::printf("vocabulary: %lld ids (0 padding, 1 unknown)\n",
              static_cast<long long>(vocab.size()));
  const auto batches = examples(train_path, vocab).padded_batch(o.batch);
  const auto train = examples(train_path, vocab)
                         .shuffle(4096, o.seed)
                         .padded_batch(o.batch)
                         .prefetch(2);
  const auto test = examples(test_path, vocab).padded_batch(256);
  int64_t steps = 0;
  for (const auto& batch : batches) {
    (void)batch;
    ++steps;
  }

  nn::Sequential lstm;
  lstm.add(nn::Embedding(vocab.size(), o.embedding, {.mask_zero = true}));
  lstm.add(nn::LSTM(o.units));
  lstm.add(nn::Dense(2));
  const double lstm_accuracy =
      train_and_test("lstm", lstm, o, train, test, steps);
  // The same words without their order: an average of the embeddings.
  nn::Sequential bag;
  bag.add(nn::Embedding(vocab.size(), o.embedding));
  bag.add(nn::ActivationLayer([](const Tensor& x) { return tpf::mean(x, {1}); },
                              "average"));
  bag.add(nn::Dense(2));
  const double bag_accuracy =
      train_and_test("bag of words", bag, o, train, test, steps);
  std::printf("\ntest accuracy: LSTM %.3f, bag of words %.3f\n", lstm_accuracy,
              bag_accuracy);
  if (!(lstm_accuracy >= o.min_accuracy)) {
    std::fprintf(
        stderr,
        "self-check failed: LSTM test accuracy %.3f, expected >= %.3f\n",
        lstm_accuracy, o.min_accuracy);
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "Sentiment of short reviews with Embedding + LSTM, the text read as "
      "string tensors and turned into ids in the input pipeline"};
  Options o;
  app.add_option("--data-dir", o.data_dir,
                 "folder of sentiment_train.txt and sentiment_test.txt")
      ->capture_default_str();
  app.add_option("--epochs", o.epochs, "passes over the training sentences")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--batch", o.batch, "sentences per step")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--embedding", o.embedding, "embedding width")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--units", o.units, "LSTM units")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--learning-rate", o.learning_rate, "Adam's learning rate")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--seed", o.seed, "seed of weights and shuffling")
      ->capture_default_str();
  app.add_option("--min-accuracy", o.min_accuracy,
                 "self-check: the final test accuracy must reach this")
      ->capture_default_str();
  samples::add_threads_option(app, o.threads);
  CLI11_PARSE(app, argc, argv);
  return samples::run_sample(o.threads, [&] { return run(o); });
}
