#pragma once
#include <vector>

#include "tapeflow/nn/module.hpp"
#include "tapeflow/nn/pooling.hpp"

namespace tapeflow::nn {

/**
 * Max or average pooling over 1, 2 or 3 spatial dimensions (nn::*_pool*d),
 * as MaxPool2D / AvgPool2D / MaxPool3D / AvgPool3D make it.
 */
class Pool : public Module {
 public:
  enum class Kind { max, avg };
  Pool(Kind kind, int spatial, PoolOptions options, std::string name = "");
  Tensor forward(const Tensor& x) override;

 private:
  Kind kind_;
  int spatial_;
  PoolOptions options_;
};

class MaxPool2D : public Pool {
 public:
  explicit MaxPool2D(PoolOptions options = {.ksize = {2, 2}})
      : Pool(Kind::max, 2, std::move(options)) {}
};
class AvgPool2D : public Pool {
 public:
  explicit AvgPool2D(PoolOptions options = {.ksize = {2, 2}})
      : Pool(Kind::avg, 2, std::move(options)) {}
};
class MaxPool3D : public Pool {
 public:
  explicit MaxPool3D(PoolOptions options = {.ksize = {2, 2, 2}})
      : Pool(Kind::max, 3, std::move(options)) {}
};
class AvgPool3D : public Pool {
 public:
  explicit AvgPool3D(PoolOptions options = {.ksize = {2, 2, 2}})
      : Pool(Kind::avg, 3, std::move(options)) {}
};

}  // namespace tapeflow::nn
