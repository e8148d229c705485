#pragma once
// cumsum along one line of the scanned axis, shared by the CPU kernel and the
// CUDA kernel (one thread per line): the same sequential order, so both give
// the same bits, and float32 rounds as TensorFlow's CPU kernel does.
#include <cstdint>

#include "core/host_device.hpp"
#include "tapeflow/core/shape.hpp"

namespace tapeflow {

/** Integers add as unsigned: two's complement wrap-around, never UB. */
template <class T>
struct ScanAccumulator {
  using type = T;
};
template <>
struct ScanAccumulator<int32_t> {
  using type = uint32_t;
};
template <>
struct ScanAccumulator<int64_t> {
  using type = uint64_t;
};

/**
 * out[i] = x[0] + ... + x[i] over n elements `x_step` and `out_step` apart;
 * `exclusive` leaves x[i] out (out[0] = 0), `reverse` sums from the end.
 */
template <class T>
TPF_HOST_DEVICE inline void cumsum_line(const T* x, int64_t x_step, T* out,
                                        int64_t out_step, int64_t n,
                                        bool exclusive, bool reverse) {
  using A = typename ScanAccumulator<T>::type;
  A total = A(0);
  for (int64_t j = 0; j < n; ++j) {
    const int64_t at = reverse ? n - 1 - j : j;
    const A v = static_cast<A>(x[at * x_step]);
    if (!exclusive) total += v;
    out[at * out_step] = static_cast<T>(total);
    if (exclusive) total += v;
  }
}

/** The axes besides the scanned one: where line k starts in x and out. */
struct ScanLines {
  int rank = 0;
  int64_t shape[kMaxRank];
  int64_t x_strides[kMaxRank];
  int64_t out_strides[kMaxRank];

  TPF_HOST_DEVICE void starts(int64_t k, int64_t& x_at, int64_t& out_at) const {
    x_at = 0;
    out_at = 0;
    for (int d = rank - 1; d >= 0; --d) {
      const int64_t i = k % shape[d];
      k /= shape[d];
      x_at += i * x_strides[d];
      out_at += i * out_strides[d];
    }
  }
};

/** ScanLines of x and out (same shape) for a scan along `axis`. */
inline ScanLines scan_lines(const Shape& shape, const Shape& x_strides,
                            const Shape& out_strides, int64_t axis) {
  ScanLines lines;
  for (int64_t d = 0; d < shape.size(); ++d) {
    if (d == axis) continue;
    lines.shape[lines.rank] = shape[d];
    lines.x_strides[lines.rank] = x_strides[d];
    lines.out_strides[lines.rank] = out_strides[d];
    ++lines.rank;
  }
  return lines;
}

}  // namespace tapeflow
