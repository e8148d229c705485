#pragma once
// Layers and models (Keras-like): tpf::nn::Sequential with Dense, Conv2D, ...
#include "tapeflow/nn/initializers.hpp"
#include "tapeflow/nn/layers/conv.hpp"
#include "tapeflow/nn/layers/core.hpp"
#include "tapeflow/nn/layers/dense.hpp"
#include "tapeflow/nn/layers/pooling.hpp"
#include "tapeflow/nn/layers/sequential.hpp"
#include "tapeflow/nn/module.hpp"
