#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "tapeflow/core/tensor.hpp"

// Weight initializers (Keras'). A layer calls one with the weight's shape and
// its fans; with a seed the values depend on nothing else.
namespace tapeflow::nn {

using Initializer = std::function<Tensor(const Shape& shape, int64_t fan_in,
                                         int64_t fan_out, DType dtype)>;
using Seed = std::optional<uint64_t>;

/** U(-l, l), l = sqrt(6 / (fan_in + fan_out)). */
Initializer glorot_uniform(Seed seed = {});
/**
 * Keras' VarianceScaling: variance scale / n, n = fan_in, fan_out or their
 * mean ("fan_in", "fan_out", "fan_avg"), drawn "uniform" or "truncated_normal".
 * PyTorch's default for the weights and biases of Linear and Conv layers is
 * variance_scaling(1.0 / 3, "fan_in", "uniform"): U(-1/sqrt(fan_in), ...).
 */
Initializer variance_scaling(double scale = 1.0, std::string mode = "fan_in",
                             std::string distribution = "truncated_normal",
                             Seed seed = {});
/** N(0, 2 / fan_in) truncated at two standard deviations. */
Initializer he_normal(Seed seed = {});
/** N(mean, stddev) with draws beyond two standard deviations redrawn. */
Initializer truncated_normal(double mean = 0.0, double stddev = 0.05,
                             Seed seed = {});
/** U(minval, maxval) (Keras' RandomUniform; Embedding's default). */
Initializer random_uniform_initializer(double minval = -0.05,
                                       double maxval = 0.05, Seed seed = {});
/**
 * A (semi-)orthogonal matrix times `gain` (Keras' default for recurrent
 * kernels): orthonormal rows or columns, whichever side is shorter.
 */
Initializer orthogonal(double gain = 1.0, Seed seed = {});
Initializer zeros_initializer();
Initializer constant(double value);

}  // namespace tapeflow::nn
