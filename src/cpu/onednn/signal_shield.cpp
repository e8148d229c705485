#include "cpu/onednn/signal_shield.hpp"

#include <omp.h>
#include <pthread.h>

#include <string_view>

namespace tapeflow::cpu::onednn {
namespace {

/**
 * Every signal but the synchronous ones: a fault blocked while it is raised
 * kills the process instead of reaching its handler.
 */
const sigset_t& asynchronous_signals() {
  static const sigset_t set = [] {
    sigset_t s;
    sigfillset(&s);
    for (int fault : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS})
      sigdelset(&s, fault);
    return s;
  }();
  return set;
}

}  // namespace

bool moves_stack_pointer(const dnnl::primitive_desc_base& pd) {
  // "gemm:jit" (matmul), "x64:gemm:jit" (convolution); not "brg:...".
  std::string_view name = pd.impl_info_str();
  if (name.starts_with("x64:")) name.remove_prefix(4);
  return name.starts_with("gemm");
}

SignalShield::SignalShield(bool active, int threads) : active_(active) {
  if (!active_) return;
  pthread_sigmask(SIG_BLOCK, &asynchronous_signals(), &saved_);
  if (threads <= 1) return;
    // OpenMP retires and starts workers as team sizes change, so each call
    // checks its team; a worker started here inherits the blocked mask.
#pragma omp parallel num_threads(threads)
  {
    thread_local bool blocked = false;
    if (omp_get_thread_num() != 0 && !blocked) {
      pthread_sigmask(SIG_BLOCK, &asynchronous_signals(), nullptr);
      blocked = true;
    }
  }
}

SignalShield::~SignalShield() {
  if (active_) pthread_sigmask(SIG_SETMASK, &saved_, nullptr);
}

}  // namespace tapeflow::cpu::onednn
