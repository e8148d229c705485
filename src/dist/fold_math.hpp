#pragma once
// One element of the canonical fold, for both backends: g++ builds it into
// src/dist/fold.cpp (and CI tests it there), nvcc into cuda/dist_nccl.cu.
#include <cstdint>
#include <type_traits>

#include "core/host_device.hpp"
#include "tapeflow/dist/communicator.hpp"

namespace tapeflow::dist::detail {

template <class T>
TPF_HOST_DEVICE bool is_nan_value(T v) {
  if constexpr (std::is_floating_point_v<T>)
    return v != v;
  else
    return false;
}

/** a op b; the sum of bools (bytes) is their or; NaN wins max and min. */
template <ReduceOp Op, class T>
TPF_HOST_DEVICE T combine(T a, T b) {
  if constexpr (Op == ReduceOp::sum || Op == ReduceOp::mean) {
    if constexpr (std::is_same_v<T, uint8_t>)
      return static_cast<T>(a | b);
    else
      return a + b;
  } else {
    if (is_nan_value(a) || is_nan_value(b)) return a + b;
    if constexpr (Op == ReduceOp::max)
      return b > a ? b : a;
    else
      return b < a ? b : a;
  }
}

/** Mean's last step for one element: * (1/N) rounded to T, or / N. */
template <class T>
TPF_HOST_DEVICE T mean_of(T sum, int ranks) {
  if constexpr (std::is_floating_point_v<T>)
    return sum * (T(1) / T(ranks));
  else if constexpr (std::is_same_v<T, uint8_t>)
    return sum;  // refused before it gets here (check_reducible)
  else
    return static_cast<T>(sum / ranks);
}

}  // namespace tapeflow::dist::detail
