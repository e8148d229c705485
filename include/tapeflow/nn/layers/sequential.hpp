#pragma once
#include <memory>
#include <string>
#include <type_traits>

#include "tapeflow/nn/module.hpp"

namespace tapeflow::nn {

/** Layers applied in order; names made unique ("dense", "dense_1", ...). */
class Sequential : public Module {
 public:
  explicit Sequential(std::string name = "sequential")
      : Module("sequential", std::move(name)) {}

  /** Appends a layer (moved in) and returns it. */
  template <class Layer>
  requires std::is_base_of_v<Module, Layer> Layer& add(Layer layer) {
    auto owned = std::make_shared<Layer>(std::move(layer));
    append(owned);
    return *owned;
  }
  void append(std::shared_ptr<Module> layer);
  Tensor forward(const Tensor& x) override;

  /**
   * Keras-style table (layer, output shape, parameter count) from one
   * forward pass, in inference mode and unrecorded, of zeros of
   * `input_shape` (batch axis included) and `dtype` (int64 for a model that
   * starts with an Embedding).
   */
  std::string summary(const Shape& input_shape, DType dtype = float32);
};

}  // namespace tapeflow::nn
