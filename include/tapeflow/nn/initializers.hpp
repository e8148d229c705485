#pragma once
#include <cstdint>
#include <functional>
#include <optional>

#include "tapeflow/core/tensor.hpp"

// Weight initializers (Keras'). A layer calls one with the weight's shape and
// its fans; with a seed the values depend on nothing else.
namespace tapeflow::nn {

using Initializer = std::function<Tensor(const Shape& shape, int64_t fan_in,
                                         int64_t fan_out, DType dtype)>;
using Seed = std::optional<uint64_t>;

/** U(-l, l), l = sqrt(6 / (fan_in + fan_out)). */
Initializer glorot_uniform(Seed seed = {});
/** N(0, 2 / fan_in) truncated at two standard deviations. */
Initializer he_normal(Seed seed = {});
/** N(mean, stddev) with draws beyond two standard deviations redrawn. */
Initializer truncated_normal(double mean = 0.0, double stddev = 0.05,
                             Seed seed = {});
Initializer zeros_initializer();
Initializer constant(double value);

}  // namespace tapeflow::nn
