#include "tapeflow/nn/initializers.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/op_error.hpp"
#include "tapeflow/core/error.hpp"
#include "tapeflow/creation.hpp"
#include "tapeflow/ops/math.hpp"
#include "tapeflow/ops/reduce.hpp"
#include "tapeflow/ops/shape.hpp"

namespace tapeflow::nn {
namespace {

/** A fresh seed per draw: the global stream, or the given seed onwards. */
uint64_t draw_seed(Seed& seed) {
  if (seed) return (*seed)++ * 0x9E3779B97F4A7C15ull + 1;
  return static_cast<uint64_t>(
      random_uniform({}, 0.0, 9007199254740992.0, float64).item<double>());
}

Tensor truncated(const Shape& shape, double mean, double stddev, DType dtype,
                 Seed seed) {
  Tensor z = stateless_random_normal(shape, draw_seed(seed), 0.0, 1.0, dtype);
  // Redraw what fell beyond two standard deviations until nothing does
  // (4.6% per round: a handful of rounds).
  for (int round = 0; round < 64; ++round) {
    const Tensor outside = abs(z) > scalar_like(z, 2.0);
    if (sum(outside).item<int64_t>() == 0) break;
    z = where(outside,
              stateless_random_normal(shape, draw_seed(seed), 0.0, 1.0, dtype),
              z);
  }
  return z * stddev + mean;
}

}  // namespace

Initializer glorot_uniform(Seed seed) {
  return [seed](const Shape& shape, int64_t fan_in, int64_t fan_out,
                DType dtype) mutable {
    // Keras: sqrt(3 / max(1, fan_avg)), so fans summing below 2 count as 2.
    const double limit =
        std::sqrt(6.0 / std::max(double(fan_in) + double(fan_out), 2.0));
    return stateless_random_uniform(shape, draw_seed(seed), -limit, limit,
                                    dtype);
  };
}

Initializer variance_scaling(double scale, std::string mode,
                             std::string distribution, Seed seed) {
  if (!(std::isfinite(scale) && scale > 0))
    throw op_error<ValueError>("variance_scaling",
                               "expected a finite scale > 0, got ", scale);
  if (mode != "fan_in" && mode != "fan_out" && mode != "fan_avg")
    throw ValueError(
        "[variance_scaling] expected mode fan_in, fan_out or fan_avg, got " +
        mode);
  if (distribution != "uniform" && distribution != "truncated_normal")
    throw ValueError(
        "[variance_scaling] expected distribution uniform or "
        "truncated_normal, got " +
        distribution);
  return [=](const Shape& shape, int64_t fan_in, int64_t fan_out,
             DType dtype) mutable {
    const double n = mode == "fan_in"    ? double(fan_in)
                     : mode == "fan_out" ? double(fan_out)
                                         : (fan_in + fan_out) / 2.0;
    const double variance = scale / std::max(n, 1.0);
    if (distribution == "uniform") {
      const double limit = std::sqrt(3.0 * variance);
      return stateless_random_uniform(shape, draw_seed(seed), -limit, limit,
                                      dtype);
    }
    // 0.8796... is the stddev of a unit normal truncated at +-2 (as Keras).
    return truncated(shape, 0.0, std::sqrt(variance) / 0.87962566103423978,
                     dtype, seed);
  };
}

Initializer he_normal(Seed seed) {
  return [seed](const Shape& shape, int64_t fan_in, int64_t, DType dtype) {
    // 0.8796... is the stddev of a unit normal truncated at +-2 (as Keras).
    const double stddev =
        std::sqrt(2.0 / double(std::max<int64_t>(fan_in, 1))) /
        0.87962566103423978;
    return truncated(shape, 0.0, stddev, dtype, seed);
  };
}

Initializer truncated_normal(double mean, double stddev, Seed seed) {
  // As random_normal: every weight would come out NaN or infinite.
  if (!std::isfinite(mean))
    throw op_error<ValueError>("truncated_normal",
                               "expected a finite mean, got ", mean);
  if (!(std::isfinite(stddev) && stddev >= 0))
    throw op_error<ValueError>("truncated_normal",
                               "expected a finite stddev >= 0, got ", stddev);
  return [=](const Shape& shape, int64_t, int64_t, DType dtype) {
    return truncated(shape, mean, stddev, dtype, seed);
  };
}

Initializer zeros_initializer() {
  return [](const Shape& shape, int64_t, int64_t, DType dtype) {
    return zeros(shape, dtype);
  };
}

Initializer constant(double value) {
  return [value](const Shape& shape, int64_t, int64_t, DType dtype) {
    return full(shape, value, dtype);
  };
}

Initializer random_uniform_initializer(double minval, double maxval,
                                       Seed seed) {
  if (!(minval < maxval))
    throw ValueError(
        "[random_uniform_initializer] expected minval < maxval, "
        "got " +
        std::to_string(minval) + " and " + std::to_string(maxval));
  return [=](const Shape& shape, int64_t, int64_t, DType dtype) mutable {
    return stateless_random_uniform(shape, draw_seed(seed), minval, maxval,
                                    dtype);
  };
}

Initializer orthogonal(double gain, Seed seed) {
  if (!std::isfinite(gain))
    throw op_error<ValueError>("orthogonal", "expected a finite gain, got ",
                               gain);
  return [=](const Shape& shape, int64_t, int64_t, DType dtype) mutable {
    if (shape.size() < 2)
      throw ValueError("[orthogonal] expected a shape of rank >= 2, got " +
                       shape.str());
    // Entries in (-1, 1) cast to an integer dtype would all be 0.
    if (!is_floating(dtype))
      throw DTypeError("[orthogonal] expected a floating dtype, got " +
                       std::string(dtype_name(dtype)));
    // Keras: a normal draw as a (rows, cols) matrix, Q of its QR (of the
    // transpose when wide) with column signs from R's diagonal. Modified
    // Gram-Schmidt over the long side gives the same Q.
    const int64_t cols = shape.back();
    const int64_t rows = shape.numel() / std::max<int64_t>(cols, 1);
    const int64_t n = std::max(rows, cols), k = std::min(rows, cols);
    std::vector<double> q =
        stateless_random_normal({k, n}, draw_seed(seed), 0.0, 1.0, float64)
            .to_vector<double>();  // k vectors of length n
    for (int64_t j = 0; j < k; ++j) {
      double* v = q.data() + j * n;
      for (int64_t p = 0; p < j; ++p) {
        const double* u = q.data() + p * n;
        double dot = 0;
        for (int64_t i = 0; i < n; ++i) dot += u[i] * v[i];
        for (int64_t i = 0; i < n; ++i) v[i] -= dot * u[i];
      }
      double norm = 0;
      for (int64_t i = 0; i < n; ++i) norm += v[i] * v[i];
      norm = std::sqrt(norm);
      for (int64_t i = 0; i < n; ++i) v[i] /= norm > 0 ? norm : 1.0;
    }
    Tensor m = from_vector(q, {k, n});                // orthonormal rows
    if (rows >= cols) m = transpose(m).contiguous();  // orthonormal columns
    return cast(reshape(m * gain, shape), dtype);
  };
}

}  // namespace tapeflow::nn
