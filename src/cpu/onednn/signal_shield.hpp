// oneDNN 2.x's generated f32 GEMM kernels, behind every "gemm:jit" primitive
// (the AVX2 matmul; on AVX-512 a layout brgemm does not take), point rsp at a
// heap buffer while they run (oneDNN issue 4845, fixed in 3.11): a signal
// handled on a thread inside one pushes its frame over that heap, and malloc
// aborts later ("corrupted size vs. prev_size"). A training loop's Ctrl-C
// handler did it on AVX2 CPUs. Such primitives run with the asynchronous
// signals blocked on every thread they run on; a signal that comes meanwhile
// is handled when the call returns.
#pragma once

#include <signal.h>

#include <dnnl.hpp>

namespace tapeflow::cpu::onednn {

/** Whether `pd`'s implementation runs the GEMM kernels that move rsp. */
bool moves_stack_pointer(const dnnl::primitive_desc_base& pd);

/**
 * While alive (when `active`), the calling thread blocks the asynchronous
 * signals, and so do the `threads` - 1 OpenMP workers of its team (they keep
 * them blocked: a process's signals go to its own threads).
 */
class SignalShield {
 public:
  SignalShield(bool active, int threads);
  ~SignalShield();
  SignalShield(const SignalShield&) = delete;
  SignalShield& operator=(const SignalShield&) = delete;

 private:
  bool active_;
  sigset_t saved_;
};

}  // namespace tapeflow::cpu::onednn
