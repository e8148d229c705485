#pragma once
// The samples' models, shared with benchmarks/bench_train.cpp so that the
// training-step benchmark always measures exactly what the samples train.
#include "tapeflow/tapeflow.hpp"

namespace samples {

/** conv5x5·32 → pool → conv5x5·64 → pool → dense 1024 → dropout → dense 10. */
inline tapeflow::nn::Sequential mnist_cnn() {
  namespace nn = tapeflow::nn;
  nn::Sequential model("mnist_cnn");
  model.add(
      nn::Conv2D(32, {5, 5}, {.padding = "SAME", .activation = nn::relu}));
  model.add(nn::MaxPool2D());
  model.add(
      nn::Conv2D(64, {5, 5}, {.padding = "SAME", .activation = nn::relu}));
  model.add(nn::MaxPool2D());
  model.add(nn::Flatten());
  model.add(nn::Dense(1024, {.activation = nn::relu}));
  model.add(nn::Dropout(0.5));
  model.add(nn::Dense(10));
  return model;
}

/** 784 → 10 softmax regression, zero-initialized as in TensorFlow's tutorial.
 */
inline tapeflow::nn::Sequential mnist_softmax() {
  namespace nn = tapeflow::nn;
  nn::Sequential model("mnist_softmax");
  model.add(nn::Flatten());
  model.add(nn::Dense(10, {.kernel_initializer = nn::zeros_initializer()}));
  return model;
}

}  // namespace samples
