#pragma once
// The libtorch peer of samples::mnist_cnn() (common/models.hpp): the same
// layers with PyTorch's default initializers. Shared by mnist_cnn_torch.cpp
// and benchmarks/torch_peer_train.cpp.
#include <torch/torch.h>

namespace samples {

inline torch::nn::Sequential mnist_cnn_torch() {
  namespace tnn = torch::nn;
  return tnn::Sequential(tnn::Conv2d(tnn::Conv2dOptions(1, 32, 5).padding(2)),
                         tnn::ReLU(), tnn::MaxPool2d(2),
                         tnn::Conv2d(tnn::Conv2dOptions(32, 64, 5).padding(2)),
                         tnn::ReLU(), tnn::MaxPool2d(2), tnn::Flatten(),
                         tnn::Linear(7 * 7 * 64, 1024), tnn::ReLU(),
                         tnn::Dropout(0.5), tnn::Linear(1024, 10));
}

}  // namespace samples
