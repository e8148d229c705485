// Creation functions: constants, ranges, identity, host data, random.
#include "tapeflow/creation.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <numeric>

#include "core/checked.hpp"
#include "core/cpu_allocator.hpp"
#include "core/dtype_dispatch.hpp"
#include "core/op_error.hpp"
#include "ops/apply.hpp"
#include "ops/elementwise_ops.hpp"
#include "tapeflow/ops/shape.hpp"

namespace tapeflow {

Tensor empty(const Shape& shape, DType dtype, Device device) {
  return empty_tensor(shape, dtype, device);
}

Tensor full(const Shape& shape, double value, DType dtype, Device device) {
  for (int64_t d : shape)
    if (d < 0)
      throw ShapeError("[full] expected non-negative extents, got " +
                       shape.str());
  check_representable(value, dtype, "full");
  return apply_on(device, Full{shape, dtype, value}, Inputs{});
}
Tensor zeros(const Shape& shape, DType dtype, Device device) {
  return full(shape, 0.0, dtype, device);
}
Tensor ones(const Shape& shape, DType dtype, Device device) {
  return full(shape, 1.0, dtype, device);
}
Tensor zeros_like(const Tensor& t) {
  // A string tensor's zero is the empty string (tf.zeros_like).
  if (is_string(t.dtype())) return empty_tensor(t.shape(), string_, t.device());
  return zeros(t.shape(), t.dtype(), t.device());
}
Tensor ones_like(const Tensor& t) {
  return ones(t.shape(), t.dtype(), t.device());
}
Tensor scalar(double value, DType dtype, Device device) {
  check_representable(value, dtype, "scalar");
  if (!device.is_cpu()) return full({}, value, dtype, device);
  // Host scalars are written directly: `x * 0.5` makes one per call.
  Tensor t = empty_tensor({}, dtype, device);
  dispatch_all(dtype, "scalar", [&](auto tag) {
    using T = decltype(tag);
    *static_cast<T*>(t.raw_data()) =
        std::is_same_v<T, uint8_t> ? T(value != 0) : static_cast<T>(value);
  });
  return t;
}

namespace {
/** Creators that compute their values refuse string_ under their own name. */
void check_numeric(DType dtype, const char* op) {
  if (is_string(dtype))
    throw op_error<DTypeError>(op, "expected a numeric dtype, got string");
}
}  // namespace

Tensor from_buffer(const void* data, const Shape& shape, DType dtype,
                   Device device) {
  if (is_string(dtype))
    throw op_error<DTypeError>("from_buffer",
                               "expected a numeric dtype, got string "
                               "(from_strings makes string tensors)");
  if (!device.is_cpu()) checked_backend(device, "from_buffer");
  Tensor t = empty_tensor(shape, dtype, Device::cpu());
  if (t.numel() > 0 && data == nullptr)
    throw op_error<ValueError>("from_buffer", "expected data for ", t.numel(),
                               " elements of shape ", shape.str(),
                               ", got a null pointer");
  if (t.numel()) std::memcpy(t.raw_data(), data, t.numel() * itemsize(dtype));
  // bool_ holds 0 or 1 (core/dtype.hpp), as load_npz makes it: a byte of 2
  // would be true to where() and unequal to true, 2 to cast and sum.
  if (dtype == bool_) {
    auto* bytes = static_cast<uint8_t*>(t.raw_data());
    for (int64_t i = 0; i < t.numel(); ++i) bytes[i] = bytes[i] != 0;
  }
  return t.to(device);
}

namespace {
/** start, start + step, ... (n values) in T, then in `dtype`. */
template <class T>
Tensor range_tensor(T start, T step, int64_t n, DType dtype) {
  Tensor t = empty_tensor({n}, dtype_of<T>(), Device::cpu(), "arange");
  T* v = t.data<T>();
  if constexpr (std::is_integral_v<T>) {
    // A running sum: start + i * step may overflow where every value fits.
    T x = start;
    for (int64_t i = 0; i < n; ++i) {
      v[i] = x;
      if (i + 1 < n) x += step;
    }
  } else {
    for (int64_t i = 0; i < n; ++i) v[i] = start + static_cast<T>(i) * step;
  }
  // Made on the host, then placed where zeros() would be (a DeviceScope).
  return t.cast(dtype).to(default_device());
}
}  // namespace

Tensor detail::arange_integral(int64_t start, int64_t stop, int64_t step,
                               DType dtype) {
  check_numeric(dtype, "arange");
  if (step == 0) throw ValueError("[arange] expected a non-zero step, got 0");
  // The count in 128 bits: stop - start can exceed int64 (INT64_MIN to MAX).
  const __int128 span = static_cast<__int128>(stop) - start;
  const __int128 n = span == 0 || (span > 0) != (step > 0)
                         ? 0
                         : (span - (step > 0 ? 1 : -1)) / step + 1;
  if (n > INT64_MAX)
    throw op_error<ValueError>("arange",
                               "expected at most 2^63 - 1 values, got [", start,
                               ", ", stop, ") in steps of ", step);
  return range_tensor<int64_t>(start, step, static_cast<int64_t>(n), dtype);
}
Tensor detail::arange_floating(double start, double stop, double step,
                               DType dtype) {
  check_numeric(dtype, "arange");
  if (step == 0) throw ValueError("[arange] expected a non-zero step, got 0");
  // NaN anywhere counts nothing in the line below: NumPy refuses it.
  if (std::isnan(start) || std::isnan(stop) || std::isnan(step))
    throw op_error<ValueError>("arange", "expected numbers, got [", start, ", ",
                               stop, ") in steps of ", step);
  const double n = std::max(0.0, std::ceil((stop - start) / step));
  if (!(n < 9.2e18))
    throw op_error<ValueError>("arange",
                               "expected a finite count of values, got [",
                               start, ", ", stop, ") in steps of ", step);
  return range_tensor<double>(start, step, static_cast<int64_t>(n), dtype);
}

Tensor eye(int64_t n, int64_t m, DType dtype) {
  check_numeric(dtype, "eye");
  if (m == -1) m = n;  // the default: square
  if (n < 0 || m < 0)
    throw op_error<ValueError>(
        "eye", "expected n >= 0 and m >= 0 (or -1 for m = n), got n ", n,
        ", m ", m);
  Tensor t = empty_tensor({n, m}, float64, Device::cpu(), "eye");
  double* v = t.data<double>();
  std::fill_n(v, n * m, 0.0);
  for (int64_t i = 0; i < std::min(n, m); ++i) v[i * m + i] = 1.0;
  return t.cast(dtype).to(default_device());
}

// --- random ------------------------------------------------------------------

namespace {
std::atomic<uint64_t> g_seed{0x5eed5eed5eedULL};
std::atomic<uint64_t> g_offset{0};

/** Reserves `n` counters of the global stream. */
uint64_t take_offset(int64_t n) {
  return g_offset.fetch_add(static_cast<uint64_t>(n));
}

void check_random(const Shape& shape, DType dtype, const char* op) {
  if (!is_floating(dtype))
    throw op_error<DTypeError>(op, "expected float32 or float64, got ",
                               dtype_name(dtype));
  for (int64_t d : shape)
    if (d < 0)
      throw op_error<ShapeError>(op, "expected non-negative extents, got ",
                                 shape.str());
}
}  // namespace

void manual_seed(uint64_t seed) {
  g_seed = seed;
  g_offset = 0;
}

RngState get_rng_state() {
  return {g_seed.load(), g_offset.load()};
}
void set_rng_state(RngState state) {
  g_seed = state.seed;
  g_offset = state.offset;
}

namespace {
/** Finite bounds, minval < maxval: infinite ones would draw NaN and inf. */
void check_uniform_bounds(double minval, double maxval, const char* op) {
  if (!(std::isfinite(minval) && std::isfinite(maxval) && minval < maxval))
    throw op_error<ValueError>(op, "expected finite minval < maxval, got ",
                               minval, " and ", maxval);
}
/** A finite mean and a finite stddev >= 0 (NaN would fill the tensor). */
void check_normal_params(double mean, double stddev, const char* op) {
  if (!(std::isfinite(mean) && std::isfinite(stddev) && stddev >= 0))
    throw op_error<ValueError>(op,
                               "expected a finite mean and a finite "
                               "stddev >= 0, got ",
                               mean, " and ", stddev);
}
}  // namespace

Tensor random_uniform(const Shape& shape, double minval, double maxval,
                      DType dtype, Device device) {
  check_random(shape, dtype, "random_uniform");
  check_uniform_bounds(minval, maxval, "random_uniform");
  return apply_on(device,
                  RandomUniform{shape, dtype, minval, maxval, g_seed,
                                take_offset(shape.numel())},
                  Inputs{});
}

Tensor random_normal(const Shape& shape, double mean, double stddev,
                     DType dtype, Device device) {
  check_random(shape, dtype, "random_normal");
  check_normal_params(mean, stddev, "random_normal");
  return apply_on(device,
                  RandomNormal{shape, dtype, mean, stddev, g_seed,
                               take_offset(shape.numel())},
                  Inputs{});
}

Tensor stateless_random_uniform(const Shape& shape, uint64_t seed,
                                double minval, double maxval, DType dtype,
                                Device device) {
  check_random(shape, dtype, "stateless_random_uniform");
  check_uniform_bounds(minval, maxval, "stateless_random_uniform");
  return apply_on(device, RandomUniform{shape, dtype, minval, maxval, seed, 0},
                  Inputs{});
}

Tensor stateless_random_normal(const Shape& shape, uint64_t seed, double mean,
                               double stddev, DType dtype, Device device) {
  check_random(shape, dtype, "stateless_random_normal");
  check_normal_params(mean, stddev, "stateless_random_normal");
  return apply_on(device, RandomNormal{shape, dtype, mean, stddev, seed, 0},
                  Inputs{});
}

Tensor shuffle(const Tensor& x) {
  if (x.rank() == 0) return x;
  const int64_t n = x.shape()[0];
  // Sort by random keys: a permutation that depends only on the seed stream.
  const std::vector<double> keys =
      random_uniform({n}, 0.0, 1.0, float64).to_vector<double>();
  std::vector<int64_t> perm(n);
  std::iota(perm.begin(), perm.end(), 0);
  std::stable_sort(perm.begin(), perm.end(),
                   [&](int64_t a, int64_t b) { return keys[a] < keys[b]; });
  return gather(x, from_vector(perm, {n}), 0);
}

}  // namespace tapeflow
