#pragma once
#include <cstdint>
#include <initializer_list>
#include <string>
#include <type_traits>
#include <vector>

#include "tapeflow/core/tensor.hpp"

namespace tapeflow {

/** Uninitialized tensor (contents unspecified). */
Tensor empty(const Shape& shape, DType dtype = float32,
             Device device = default_device());
/** Tensor filled with `value` converted to `dtype`. */
Tensor full(const Shape& shape, double value, DType dtype = float32,
            Device device = default_device());
Tensor zeros(const Shape& shape, DType dtype = float32,
             Device device = default_device());
Tensor ones(const Shape& shape, DType dtype = float32,
            Device device = default_device());
Tensor zeros_like(const Tensor& t);
Tensor ones_like(const Tensor& t);
/** Rank-0 tensor. */
Tensor scalar(double value, DType dtype = float32,
              Device device = default_device());
/** Tensor of `shape` whose dtype follows the literal: fill({2, 3}, 5.0f). */
template <class T>
Tensor fill(const Shape& shape, T value) {
  return full(shape, static_cast<double>(value), dtype_of<T>());
}
/**
 * Copies `count` elements of `dtype` from host memory into a new tensor;
 * bool_ bytes other than 0 read as true (stored as 1).
 */
Tensor from_buffer(const void* data, const Shape& shape, DType dtype,
                   Device device = default_device());
/** A string_ tensor (always on the CPU) holding `values` row-major. */
Tensor from_strings(const std::vector<std::string>& values, const Shape& shape);
/** A 0-d string tensor: tpf::constant("Hello World!") (tf.constant). */
Tensor constant(const std::string& text);
inline Tensor constant(const char* text) {
  return constant(std::string(text));
}
template <class T>
Tensor from_vector(const std::vector<T>& values, const Shape& shape) {
  if constexpr (std::is_same_v<T, std::string>)
    return from_strings(values, shape);
  if (static_cast<int64_t>(values.size()) != shape.numel())
    throw ShapeError("[from_vector] expected " + std::to_string(shape.numel()) +
                     " values for shape " + shape.str() + ", got " +
                     std::to_string(values.size()));
  if constexpr (std::is_same_v<T, bool>) {
    std::vector<uint8_t> bytes(values.begin(), values.end());
    return from_buffer(bytes.data(), shape, bool_);
  } else {
    return from_buffer(values.data(), shape, dtype_of<T>());
  }
}
/** 1-D tensor; dtype from the literals: tensor({1.f, 2.f}). */
template <class T>
Tensor tensor(std::initializer_list<T> values) {
  return from_vector(std::vector<T>(values),
                     {static_cast<int64_t>(values.size())});
}
/** 2-D tensor from nested lists; every row must have the same length. */
template <class T>
Tensor tensor(std::initializer_list<std::initializer_list<T>> rows) {
  std::vector<T> flat;
  const int64_t cols =
      rows.size() ? static_cast<int64_t>(rows.begin()->size()) : 0;
  for (const auto& r : rows) {
    if (static_cast<int64_t>(r.size()) != cols)
      throw ShapeError("[tensor] expected rows of " + std::to_string(cols) +
                       " values, got a row of " + std::to_string(r.size()));
    flat.insert(flat.end(), r.begin(), r.end());
  }
  return from_vector(flat, {static_cast<int64_t>(rows.size()), cols});
}
/** 3-D tensor from nested lists. */
template <class T>
Tensor tensor(
    std::initializer_list<std::initializer_list<std::initializer_list<T>>>
        blocks) {
  std::vector<T> flat;
  Shape inner;
  for (const auto& b : blocks) {
    Tensor t = tensor<T>(b);
    if (inner.empty()) inner = t.shape();
    if (!(t.shape() == inner))
      throw ShapeError("[tensor] expected blocks of shape " + inner.str() +
                       ", got " + t.shape().str());
    auto v = t.to_vector<T>();
    flat.insert(flat.end(), v.begin(), v.end());
  }
  return from_vector(
      flat, {static_cast<int64_t>(blocks.size()), inner.size() ? inner[0] : 0,
             inner.size() ? inner[1] : 0});
}
namespace detail {
Tensor arange_integral(int64_t start, int64_t stop, int64_t step, DType dtype);
Tensor arange_floating(double start, double stop, double step, DType dtype);
}  // namespace detail
/** [start, stop) with `step`: int64 for integer arguments, float32 otherwise.
 */
template <class T>
requires std::is_arithmetic_v<T> Tensor
arange(T start, T stop, T step = T(1),
       DType dtype = std::is_integral_v<T> ? int64 : float32) {
  if constexpr (std::is_integral_v<T>)
    return detail::arange_integral(start, stop, step, dtype);
  else
    return detail::arange_floating(start, stop, step, dtype);
}
/** Identity matrix of n rows and m columns (m = n when omitted). */
Tensor eye(int64_t n, int64_t m = -1, DType dtype = float32);

/** Seeds the global generator: later random ops repeat exactly. */
void manual_seed(uint64_t seed);
/**
 * The global generator's whole state: the Philox key (`seed`) and the number
 * of counters already handed out (`offset`). Random ops after
 * set_rng_state(s) repeat those that followed the get_rng_state() that gave s.
 */
struct RngState {
  uint64_t seed = 0;
  uint64_t offset = 0;
  friend bool operator==(const RngState&, const RngState&) = default;
};
RngState get_rng_state();
void set_rng_state(RngState state);
/**
 * Uniform in [minval, maxval), drawn on `device`. Counter-based: the same
 * values for any thread count and on every device (uniform bits equal; a
 * GPU's normal values within a few ulp of the CPU's libm).
 */
Tensor random_uniform(const Shape& shape, double minval = 0.0,
                      double maxval = 1.0, DType dtype = float32,
                      Device device = default_device());
Tensor random_normal(const Shape& shape, double mean = 0.0, double stddev = 1.0,
                     DType dtype = float32, Device device = default_device());

/**
 * Stateless variants (tf.random.stateless_*): the values depend only on
 * `seed`, and the global stream is left as it is.
 */
Tensor stateless_random_uniform(const Shape& shape, uint64_t seed,
                                double minval = 0.0, double maxval = 1.0,
                                DType dtype = float32,
                                Device device = default_device());
Tensor stateless_random_normal(const Shape& shape, uint64_t seed,
                               double mean = 0.0, double stddev = 1.0,
                               DType dtype = float32,
                               Device device = default_device());

}  // namespace tapeflow
