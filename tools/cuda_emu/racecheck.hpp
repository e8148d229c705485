#pragma once
// What the CUDA emulator's scheduler tells its race check (racecheck.cpp):
// the running GPU thread and how far its block's barriers and its warp's
// shuffles have brought it. The race check is on where the backend is built
// with -fsanitize=thread (tools/cuda_emu/racecheck); elsewhere these calls
// cost a store or two.
#include <cstddef>
#include <cstdint>

namespace tapeflow::cuda_emu {

struct Site;

/**
 * A GPU thread's place in its launch. An access of one thread is ordered
 * before another thread's access when both threads are in one block and a
 * __syncthreads has released the second since, or both are lanes of one
 * warp and a whole-warp shuffle has. Blocks are never ordered within a
 * launch.
 */
struct ThreadClock {
  uint32_t block = 0;     // linear index in the grid
  uint32_t thread = 0;    // linear index in the block
  uint32_t barriers = 0;  // the block's barriers that released it so far
  uint32_t shuffles = 0;  // its warp's whole-warp shuffles so far
  // The thread's own stack, which no other thread can reach.
  const char* stack_begin = nullptr;
  const char* stack_end = nullptr;
};

/**
 * The GPU thread running, on the host thread running the launch; null
 * outside a launch. Launches run one at a time. (Not a thread_local: static
 * TLS is scarce for a dlopen'ed backend, and __tls_get_addr would be called
 * on every access.)
 */
void set_running_thread(const ThreadClock* clock);

/**
 * A launch starts: everything before it is ordered before all of it
 * (launches are checked one at a time, whichever their streams).
 */
void race_check_launch(const Site& site);

}  // namespace tapeflow::cuda_emu
