#pragma once
// One row's sparse softmax cross entropy from its maximum m and its sum
// s = sum(exp(x - m)), shared by the CPU kernel (cpu/softmax_cross_entropy.cpp)
// and the CUDA kernel (cuda/softmax_cross_entropy.cu).
#include <cmath>
#include <cstdint>

#include "core/host_device.hpp"

namespace tapeflow {

/** Whether `label` names one of `classes` classes. */
TPF_HOST_DEVICE inline bool label_in_range(int64_t label, int64_t classes) {
  return label >= 0 && label < classes;
}

/**
 * The loss log(s) - (x[label] - m), or NaN for a label out of range (whose
 * logit must not be read: pass any value as x_label).
 */
template <class T>
TPF_HOST_DEVICE inline T cross_entropy_loss(T max, T sum, T x_label,
                                            bool label_ok) {
  using std::log;
  return label_ok ? log(sum) - (x_label - max) : T(NAN);
}

}  // namespace tapeflow
