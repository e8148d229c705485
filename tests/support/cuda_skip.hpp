#pragma once
// For the test binaries that need a GPU (test_cuda, test_cuda_ops): whether
// cuda:0 is there, and main's exit code, 77 (meson's SKIP) where it is not.
#include "tapeflow/tapeflow.hpp"

namespace testing {

inline const tapeflow::Device gpu = tapeflow::Device::cuda(0);

/** Whether cuda:0 can allocate (the CUDA backend loads on first use). */
inline bool has_gpu() {
  static const bool present = [] {
    try {
      (void)tapeflow::zeros({1}, tapeflow::float32, gpu);
      return true;
    } catch (const tapeflow::DeviceError&) {
      return false;
    }
  }();
  return present;
}

/** doctest's result, or 77 when every case was skipped for want of a GPU. */
inline int gpu_test_exit_code(int doctest_rc) {
  return doctest_rc ? doctest_rc : (has_gpu() ? 0 : 77);
}

}  // namespace testing
