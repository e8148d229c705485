// Dense, dropout, flatten, pooling and Sequential layers.
#include "tapeflow/nn/layers.hpp"

#include <iomanip>
#include <sstream>

#include "core/checked.hpp"
#include "core/op_error.hpp"
#include "tapeflow/creation.hpp"
#include "tapeflow/nn/activations.hpp"
#include "tapeflow/nn/dropout.hpp"
#include "tapeflow/ops/linalg.hpp"
#include "tapeflow/ops/math.hpp"
#include "tapeflow/ops/shape.hpp"

namespace tapeflow::nn {

Dense::Dense(int64_t units, DenseOptions options)
    : Module("dense", options.name),
      units_(units),
      options_(std::move(options)) {
  if (units <= 0)
    throw ValueError("[Dense] expected units > 0, got " +
                     std::to_string(units));
  if (options_.input_dim > 0) {
    build({options_.input_dim});
    mark_built();
  }
}

void Dense::build(const Shape& input_shape) {
  if (input_shape.empty())
    throw op_error<ShapeError>(name(),
                               "expected an input of rank >= 1, got a scalar");
  const int64_t in = input_shape.back();
  kernel_ = add_weight(
      "kernel", options_.kernel_initializer({in, units_}, in, units_, float32));
  if (options_.use_bias)
    bias_ = add_weight(
        "bias", options_.bias_initializer({units_}, in, units_, float32));
}

Tensor Dense::forward(const Tensor& x) {
  const int64_t in = kernel_.shape()[0];
  if (x.rank() < 1 || x.shape().back() != in)
    throw op_error<ShapeError>(name(), "expected inputs (..., ", in, "), got ",
                               x.shape().str());
  Tensor y = x.rank() == 2
                 ? matmul(x, kernel_)
                 : reshape(matmul(reshape(x, {-1, in}), kernel_), [&] {
                     Shape s = x.shape();
                     s[s.size() - 1] = units_;
                     return s;
                   }());
  if (options_.use_bias) y = y + bias_;
  return options_.activation ? options_.activation(y) : y;
}

Dropout::Dropout(double rate, std::optional<uint64_t> seed, std::string name)
    : Module("dropout", std::move(name)), rate_(rate), seed_(seed) {
  if (!(rate >= 0 && rate < 1))  // NaN too
    throw op_error<ValueError>("Dropout", "expected a rate in [0, 1), got ",
                               rate);
}

Tensor Dropout::forward(const Tensor& x) {
  if (!is_training() || rate_ == 0) return x;
  // A seeded layer draws a new mask per call, still repeatable run to run.
  std::optional<uint64_t> seed;
  if (seed_) seed = *seed_ + 0x9E3779B97F4A7C15ull * calls_++;
  return dropout(x, rate_, true, {}, seed);
}

Tensor Flatten::forward(const Tensor& x) {
  if (x.rank() < 1)
    throw op_error<ShapeError>(name(),
                               "expected inputs (N, ...), got a scalar");
  // The feature count named, not -1: an empty batch leaves -1 undetermined.
  int64_t features = 1;
  for (int64_t i = 1; i < x.rank(); ++i)
    features = checked_mul(features, x.shape()[i], name(),
                           "the flattened feature count");
  return reshape(x, {x.shape()[0], features});
}

Pool::Pool(Kind kind, int spatial, PoolOptions options, std::string name)
    : Module(std::string(kind == Kind::max ? "max" : "avg") + "_pooling" +
                 std::to_string(spatial) + "d",
             std::move(name)),
      kind_(kind),
      spatial_(spatial),
      options_(std::move(options)) {
  if (spatial < 1 || spatial > 3)
    throw op_error<ValueError>(
        "Pool", "expected 1, 2 or 3 spatial dimensions, got ", spatial);
}

Tensor Pool::forward(const Tensor& x) {
  const bool max = kind_ == Kind::max;
  if (spatial_ == 1)
    return max ? max_pool1d(x, options_) : avg_pool1d(x, options_);
  if (spatial_ == 2)
    return max ? max_pool2d(x, options_) : avg_pool2d(x, options_);
  return max ? max_pool3d(x, options_) : avg_pool3d(x, options_);
}

void Sequential::append(std::shared_ptr<Module> layer) {
  check_child(layer.get());
  const auto taken = [this](const std::string& name) {
    for (const auto& c : children())
      if (c->name() == name) return true;
    return false;
  };
  for (const auto& c : children())
    if (c == layer)  // refused before any renaming: the model stays as it was
      throw op_error<ValueError>(name(), "expected a layer not in the model, ",
                                 "got \"", layer->name(), "\" a second time");
  // Keras naming: the first free one of type, type_1, type_2, ... among this
  // model's layers (a name given explicitly is kept).
  if (layer->name() == layer->type()) {
    std::string free = layer->type();
    for (int k = 1; taken(free); ++k)
      free = layer->type() + "_" + std::to_string(k);
    layer->set_name(free);
  }
  add_child(std::move(layer));
}

namespace {

/**
 * One layer of the chain: built if new, run with the mask of padded steps
 * the layers before made (Keras' mask propagation), which it then updates.
 */
Tensor chain_step(Module& layer, const Tensor& in, Tensor& mask) {
  layer.build_for(in.shape(), in.device());
  const Tensor out =
      mask.defined() ? layer.forward_masked(in, mask) : layer.forward(in);
  mask = layer.output_mask(in, mask);
  return out;
}

}  // namespace

Tensor Sequential::forward(const Tensor& x) {
  Tensor y = x, mask;
  for (const auto& layer : children()) y = chain_step(*layer, y, mask);
  return y;
}

std::string Sequential::summary(const Shape& input_shape, DType dtype) {
  const bool was_training = is_training();
  eval();
  std::vector<std::pair<Shape, int64_t>> rows;
  {
    NoGradGuard no_grad;
    Tensor y = zeros(input_shape, dtype), mask;
    for (const auto& layer : children()) {
      y = chain_step(*layer, y, mask);
      rows.emplace_back(y.shape(), layer->count_params());
    }
  }
  train(was_training);
  std::ostringstream os;
  const auto line = [&](char c) { os << std::string(66, c) << '\n'; };
  os << "Model: \"" << name() << "\"\n";
  line('=');
  os << std::left << std::setw(30) << "Layer (type)" << std::setw(24)
     << "Output Shape"
     << "Param #\n";
  line('=');
  for (size_t i = 0; i < rows.size(); ++i) {
    const auto& layer = children()[i];
    os << std::left << std::setw(30)
       << (layer->name() + " (" + layer->type() + ")") << std::setw(24)
       << rows[i].first.str() << rows[i].second << '\n';
  }
  line('=');
  const int64_t total = count_params(), trainable = count_params(true);
  os << "Total params: " << total << "\nTrainable params: " << trainable
     << "\nNon-trainable params: " << total - trainable << '\n';
  return os.str();
}

}  // namespace tapeflow::nn
