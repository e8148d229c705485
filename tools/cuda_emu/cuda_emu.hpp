#pragma once
// The prelude of the CUDA emulator, force-included (g++ -include) ahead of
// every source of the CUDA backend when tools/cuda_emu builds the backend
// for the CPU: the execution-space keywords become plain C++, the built-in
// indices are the running thread's (scheduler.cpp runs each GPU thread as a
// fiber), and a launch — rewritten from <<<...>>> by launch_syntax.py — runs
// the whole grid before it returns.
//
// What it checks is the kernels' arithmetic and indexing: every thread of
// every block runs, __syncthreads and warp shuffles wait for the threads
// they name (a barrier or shuffle that cannot complete is a fault, as is a
// shuffle whose mask names an exited lane), device
// memory starts as 0xff bytes, and a missing barrier shows when the threads
// run last to first (CUDA_EMU_ORDER=reverse). Built under AddressSanitizer
// (tools/cuda_emu), it faults an access past device memory — to the byte
// where each tensor is its own allocation, TF_GPU_ALLOCATOR=cuda_malloc — or
// past a thread's locals. Race-checked (tools/cuda_emu/racecheck), it faults
// two threads' accesses to one location, one a write, that CUDA leaves
// unordered: a missing barrier, a plain `+=` where atomicAdd belongs (a
// thread runs from one barrier to the next unbroken, so the sum is right),
// two blocks writing one element, lanes of a warp sharing plain memory with
// nothing between. What it cannot check: timing; __launch_bounds__; a read of
// shared memory no thread of the block wrote, or one past a template kernel's
// shared array (g++ leaves statics of templates, being COMDAT, without
// AddressSanitizer's redzones); what racecheck.cpp lists it misses.
#include <cuda_runtime.h>

#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <tuple>
#include <type_traits>
#include <utility>

#undef __global__
#define __global__
#undef __device__
#define __device__
#undef __host__
#define __host__
#undef __launch_bounds__
#define __launch_bounds__(...)
// Blocks run one at a time (scheduler.cpp holds a lock), so a static is
// one block's shared memory. It keeps what the block before left (g++
// ignores a section attribute on a template's statics, so they cannot be
// found to be refilled).
#undef __shared__
#define __shared__ static

inline thread_local uint3 threadIdx;
inline thread_local uint3 blockIdx;
inline thread_local dim3 blockDim;
inline thread_local dim3 gridDim;

namespace tapeflow::cuda_emu {

/** The launch site, for what the emulator reports. */
struct Site {
  const char* file;
  int line;
};

/** Runs thread_body(context) for every thread of the grid. */
void run_grid(Site site, dim3 grid, dim3 block, size_t shared_bytes,
              void (*thread_body)(void*), void* context);

/** The running thread waits for its whole block (__syncthreads). */
void block_barrier();

/**
 * The running thread hands `bits` to its warp and waits for the lanes `mask`
 * names; returns what lane + delta handed (its own past its width segment).
 */
uint64_t warp_shuffle_down(uint32_t mask, uint64_t bits, unsigned delta,
                           int width);

/**
 * An atomic read-modify-write of `bytes` at `address`, made by the code at
 * `pc`, for the race check (racecheck.cpp): atomics of different threads
 * may meet.
 */
void race_check_atomic(const void* address, size_t bytes, const void* pc);

/** A device-side trap: the emulator reports the site and aborts. */
[[noreturn]] void trap();

/**
 * `Launch(site, grid, block, smem, stream).kernel(f)(args...)` runs
 * f(args...) once for every thread of the grid, where f calls the kernel:
 * each call converts the arguments to the kernel's parameters afresh, as
 * each GPU thread gets its own copies.
 */
struct Launch {
  Site site;
  dim3 grid, block;
  size_t shared_bytes;
  Launch(const char* file, int line, dim3 grid, dim3 block,
         size_t shared_bytes = 0, cudaStream_t = nullptr)
      : site{file, line},
        grid(grid),
        block(block),
        shared_bytes(shared_bytes) {}

  template <class Kernel>
  auto kernel(Kernel kernel) const {
    return [launch = *this, kernel](auto&&... values) {
      struct Call {
        Kernel kernel;
        std::tuple<std::decay_t<decltype(values)>...> arguments;
      } call{kernel, {std::forward<decltype(values)>(values)...}};
      run_grid(
          launch.site, launch.grid, launch.block, launch.shared_bytes,
          [](void* context) {
            auto& c = *static_cast<Call*>(context);
            std::apply(c.kernel, c.arguments);
          },
          &call);
    };
  }
};

}  // namespace tapeflow::cuda_emu

inline void __syncthreads() {
  tapeflow::cuda_emu::block_barrier();
}

template <class T>
T __shfl_down_sync(unsigned mask, T value, unsigned delta, int width = 32) {
  static_assert(sizeof(T) <= sizeof(uint64_t) &&
                std::is_trivially_copyable_v<T>);
  uint64_t bits = 0;
  std::memcpy(&bits, &value, sizeof(T));
  bits = tapeflow::cuda_emu::warp_shuffle_down(mask, bits, delta, width);
  std::memcpy(&value, &bits, sizeof(T));
  return value;
}

// CUDA's device math that <cmath> lacks.
inline float rsqrtf(float x) {
  return 1.0f / std::sqrt(x);
}
inline float rsqrt(float x) {
  return 1.0f / std::sqrt(x);
}
inline double rsqrt(double x) {
  return 1.0 / std::sqrt(x);
}
inline unsigned __umulhi(unsigned a, unsigned b) {
  return unsigned((uint64_t(a) * b) >> 32);
}

[[noreturn]] inline void __trap() {
  tapeflow::cuda_emu::trap();
}
// GPU threads are fibers of the launching host thread, and the host reads
// what they wrote after the launch returns: the compiler's order is enough.
inline void __threadfence() {
  std::atomic_signal_fence(std::memory_order_seq_cst);
}
inline void __threadfence_system() {
  std::atomic_signal_fence(std::memory_order_seq_cst);
}

template <class T>
T __ldcs(const T* address) {
  return *address;
}
template <class T>
T __ldg(const T* address) {
  return *address;
}

// One thread runs at a time: a read-modify-write is atomic as written. The
// race check is told of it as an atomic made where it was called from, and
// is not shown its plain accesses.
#define CUDA_EMU_ATOMIC __attribute__((no_sanitize_thread, noinline))
template <class T>
CUDA_EMU_ATOMIC T atomicAdd(T* address, T value) {
  tapeflow::cuda_emu::race_check_atomic(address, sizeof(T),
                                        __builtin_return_address(0));
  const T old = *address;
  *address = old + value;
  return old;
}
template <class T>
CUDA_EMU_ATOMIC T atomicExch(T* address, T value) {
  tapeflow::cuda_emu::race_check_atomic(address, sizeof(T),
                                        __builtin_return_address(0));
  const T old = *address;
  *address = value;
  return old;
}
template <class T>
CUDA_EMU_ATOMIC T atomicCAS(T* address, T compare, T value) {
  tapeflow::cuda_emu::race_check_atomic(address, sizeof(T),
                                        __builtin_return_address(0));
  const T old = *address;
  if (old == compare) *address = value;
  return old;
}
template <class T>
CUDA_EMU_ATOMIC T atomicMax(T* address, T value) {
  tapeflow::cuda_emu::race_check_atomic(address, sizeof(T),
                                        __builtin_return_address(0));
  const T old = *address;
  if (value > old) *address = value;
  return old;
}
template <class T>
CUDA_EMU_ATOMIC T atomicMin(T* address, T value) {
  tapeflow::cuda_emu::race_check_atomic(address, sizeof(T),
                                        __builtin_return_address(0));
  const T old = *address;
  if (value < old) *address = value;
  return old;
}
#undef CUDA_EMU_ATOMIC
