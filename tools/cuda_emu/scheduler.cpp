// The CUDA emulator's scheduler: a launch runs its blocks one after another
// on the launching host thread, and a block's threads as fibers that run
// until they finish or wait — at __syncthreads for the whole block,
// at a shuffle for their warp. When no thread can run, the waits that are
// complete are released; when none is, the block is deadlocked (a barrier
// some threads never reach, a shuffle half a warp skips), which a GPU would
// hang on or leave undefined: the emulator names the launch site and aborts.
#include <sys/mman.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cuda_emu.hpp"
#include "fiber_switch.hpp"
#include "racecheck.hpp"

#ifdef __SANITIZE_ADDRESS__
#include <sanitizer/common_interface_defs.h>
#endif

extern "C" cudaError_t cuda_host_stub_check_launch(const char* kernel,
                                                   dim3 grid, dim3 block,
                                                   size_t shared_bytes);

namespace tapeflow::cuda_emu {
namespace {

constexpr size_t kStackBytes = size_t(128) << 10, kGuardBytes = 4096;
constexpr unsigned kWarp = 32;

enum class Wait { running, block, warp, done };

struct Fiber {
  void* stack_pointer = nullptr;
  void* stack = nullptr;
  void* fake_stack = nullptr;  // AddressSanitizer's, while switched out
  uint3 index;
  ThreadClock clock;  // for the race check
  Wait wait = Wait::running;
  uint64_t shuffle_bits = 0;
  uint32_t shuffle_mask = 0;
  unsigned shuffle_delta = 0;
  int shuffle_width = kWarp;
};

struct Block {
  void* scheduler = nullptr;  // its stack pointer while a fiber runs
  void* scheduler_fake_stack = nullptr;
  // The launching host thread's stack, for AddressSanitizer.
  const void* scheduler_stack = nullptr;
  size_t scheduler_stack_bytes = 0;
  std::vector<Fiber> fibers;  // stacks kept from launch to launch
  Fiber* current = nullptr;
  void (*thread_body)(void*) = nullptr;
  void* context = nullptr;
  Site site{};
};

// Kernels run one at a time, on whichever host thread launched them: their
// statics are shared memory, and a GPU stream runs in order anyway.
std::mutex g_launch_mutex;
Block g_block;
// Whether this host thread is running a launch (its fibers share the
// thread's thread_locals).
thread_local bool t_running_grid = false;
// CUDA_EMU_ORDER=reverse runs a block's threads last to first between
// barriers: where a kernel misses a barrier, one of the two orders reads a
// value before it is written.
const bool g_reverse = [] {
  const char* order = std::getenv("CUDA_EMU_ORDER");
  return order != nullptr && std::string_view(order) == "reverse";
}();

[[noreturn]] void fail(const char* what) {
  std::fprintf(stderr, "cuda emulator: %s in the kernel launched at %s:%d\n",
               what, g_block.site.file, g_block.site.line);
  std::abort();
}

#ifdef __SANITIZE_ADDRESS__
// AddressSanitizer's report of a bad access ends with the launch it was in,
// where the access was a kernel's: on the thread running the launch.
const bool g_site_reported = [] {
  __sanitizer_set_death_callback([] {
    if (t_running_grid)
      std::fprintf(stderr,
                   "cuda emulator: an invalid memory access (reported above) "
                   "in the kernel launched at %s:%d\n",
                   g_block.site.file, g_block.site.line);
  });
  return true;
}();
#endif

// AddressSanitizer (tests/cuda_emu_check.sh) is told of each switch
// between stacks: the stack about to run, and once there, the one left.
// Elsewhere these are no-ops.
void leaving(void** fake_stack, const void* stack, size_t bytes) {
#ifdef __SANITIZE_ADDRESS__
  __sanitizer_start_switch_fiber(fake_stack, stack, bytes);
#else
  (void)fake_stack, (void)stack, (void)bytes;
#endif
}
void arrived(void* fake_stack, const void** left = nullptr,
             size_t* left_bytes = nullptr) {
#ifdef __SANITIZE_ADDRESS__
  __sanitizer_finish_switch_fiber(fake_stack, left, left_bytes);
#else
  (void)fake_stack, (void)left, (void)left_bytes;
#endif
}

// A fiber arrives from the scheduler, whose stack is the launching thread's.
void arrived_from_scheduler(void* fake_stack) {
  arrived(fake_stack, &g_block.scheduler_stack, &g_block.scheduler_stack_bytes);
}

[[noreturn]] void thread_main() {
  arrived_from_scheduler(nullptr);
  Fiber& self = *g_block.current;
  g_block.thread_body(g_block.context);
  self.wait = Wait::done;
  leaving(nullptr, g_block.scheduler_stack, g_block.scheduler_stack_bytes);
  fiber_switch(&self.stack_pointer, g_block.scheduler);
  __builtin_unreachable();  // a finished fiber is never resumed
}

void switch_to_scheduler() {
  Fiber& self = *g_block.current;
  leaving(&self.fake_stack, g_block.scheduler_stack,
          g_block.scheduler_stack_bytes);
  fiber_switch(&self.stack_pointer, g_block.scheduler);
  arrived_from_scheduler(self.fake_stack);
  threadIdx = self.index;
}

void start(Fiber& fiber, uint3 index, uint32_t block, uint32_t thread) {
  if (fiber.stack == nullptr) {
    // A guard page below: a kernel that overflows its stack faults.
    void* mapped = mmap(nullptr, kGuardBytes + kStackBytes, PROT_NONE,
                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (mapped == MAP_FAILED ||
        mprotect(static_cast<char*>(mapped) + kGuardBytes, kStackBytes,
                 PROT_READ | PROT_WRITE) != 0)
      fail("no memory for a thread's stack");
    fiber.stack = static_cast<char*>(mapped) + kGuardBytes;
  }
  fiber.stack_pointer =
      fiber_stack(static_cast<char*>(fiber.stack) + kStackBytes, thread_main);
  fiber.index = index;
  fiber.clock =
      ThreadClock{block,
                  thread,
                  0,
                  0,
                  static_cast<const char*>(fiber.stack),
                  static_cast<const char*>(fiber.stack) + kStackBytes};
  fiber.wait = Wait::running;
}

void resume(Fiber& fiber) {
  g_block.current = &fiber;
  set_running_thread(&fiber.clock);
  threadIdx = fiber.index;
  leaving(&g_block.scheduler_fake_stack, fiber.stack, kStackBytes);
  fiber_switch(&g_block.scheduler, fiber.stack_pointer);
  arrived(g_block.scheduler_fake_stack);
}

// Lanes of warp w: threads [32 w, 32 w + 32) in linear order, as on a GPU.
// A shuffle waits for every lane its mask names, and each group of lanes
// whose masks agree is released together. What a GPU leaves undefined is a
// fault here: a named lane that has exited, a named lane at a shuffle with
// another mask, a lane outside its own mask, a source outside the mask.
bool release_warp(std::vector<Fiber>& fibers, size_t first, size_t end) {
  bool released = false;
  uint64_t handed[kWarp];
  for (size_t i = first; i < end; ++i)
    handed[i - first] = fibers[i].shuffle_bits;
  for (size_t i = first; i < end; ++i) {
    if (fibers[i].wait != Wait::warp) continue;
    const uint32_t mask = fibers[i].shuffle_mask;
    if (!(mask >> (i - first) & 1u))
      fail("a lane at a shuffle whose mask leaves it out");
    bool ready = true;
    for (size_t lane = 0; lane < kWarp; ++lane) {
      if (!(mask >> lane & 1u)) continue;
      const Fiber* named = first + lane < end ? &fibers[first + lane] : nullptr;
      if (named == nullptr || named->wait == Wait::done)
        fail("a shuffle whose mask names a lane that has exited");
      if (named->wait != Wait::warp)
        ready = false;  // on its way
      else if (named->shuffle_mask != mask)
        fail("lanes of a warp at shuffles with different masks");
    }
    if (!ready) continue;
    // A shuffle of every lane the warp has orders them, as __syncwarp would.
    const bool whole_warp =
        mask == (end - first == kWarp ? ~0u : (1u << (end - first)) - 1);
    for (size_t lane = 0; lane < kWarp; ++lane) {
      if (!(mask >> lane & 1u)) continue;
      Fiber& f = fibers[first + lane];
      const size_t width = size_t(f.shuffle_width);
      const size_t source = lane + f.shuffle_delta;
      // Past its segment of `width` lanes, a lane keeps its own value.
      if (source / width == lane / width && source < kWarp) {
        if (!(mask >> source & 1u))
          fail("a shuffle that reads a lane its mask leaves out");
        f.shuffle_bits = handed[source];
      }
      f.wait = Wait::running;
      f.clock.shuffles += whole_warp;
    }
    released = true;
  }
  return released;
}

// Threads that have exited count as arrived, and any __syncthreads pairs
// with any other, as on a GPU since Volta (bar.sync counts arrivals).
bool release_block(std::vector<Fiber>& fibers, size_t threads) {
  bool waiting = false;
  for (size_t i = 0; i < threads; ++i) {
    if (fibers[i].wait == Wait::running || fibers[i].wait == Wait::warp)
      return false;
    waiting = waiting || fibers[i].wait == Wait::block;
  }
  if (!waiting) return false;
  for (size_t i = 0; i < threads; ++i)
    if (fibers[i].wait == Wait::block) {
      fibers[i].wait = Wait::running;
      ++fibers[i].clock.barriers;
    }
  return true;
}

void run_block(dim3 block, uint32_t linear_block) {
  const size_t threads = size_t(block.x) * block.y * block.z;
  std::vector<Fiber>& fibers = g_block.fibers;
  if (fibers.size() < threads) fibers.resize(threads);
  for (size_t i = 0; i < threads; ++i)
    start(fibers[i],
          uint3{unsigned(i % block.x), unsigned(i / block.x % block.y),
                unsigned(i / (size_t(block.x) * block.y))},
          linear_block, uint32_t(i));
  for (;;) {
    bool finished = true;
    for (size_t n = 0; n < threads; ++n) {
      const size_t i = g_reverse ? threads - 1 - n : n;
      if (fibers[i].wait == Wait::running) resume(fibers[i]);
      finished = finished && fibers[i].wait == Wait::done;
    }
    if (finished) return;
    bool released = release_block(fibers, threads);
    for (size_t first = 0; first < threads; first += kWarp)
      released =
          release_warp(fibers, first, std::min(first + kWarp, threads)) ||
          released;
    if (!released)
      fail("a barrier or shuffle that a thread it waits for never reaches");
  }
}

// With CUDA_EMU_SITES=FILE, the launch sites that ran are appended to FILE
// at exit, one "FILE:LINE" a line: over the test suites, which kernels the
// emulator has checked.
std::set<std::pair<std::string, int>> g_sites;
void write_sites() {
  const char* path = std::getenv("CUDA_EMU_SITES");
  if (path == nullptr) return;
  FILE* out = std::fopen(path, "a");
  if (out == nullptr) return;
  const std::lock_guard<std::mutex> lock(g_launch_mutex);
  for (const auto& [file, line] : g_sites)
    std::fprintf(out, "%s:%d\n", file.c_str(), line);
  std::fclose(out);
}
const int g_sites_written = std::atexit(write_sites);

}  // namespace

void run_grid(Site site, dim3 grid, dim3 block, size_t shared_bytes,
              void (*thread_body)(void*), void* context) {
  // What a GPU would refuse is refused here too, with the same error.
  char name[512];
  std::snprintf(name, sizeof name, "the kernel at %s:%d", site.file, site.line);
  if (cuda_host_stub_check_launch(name, grid, block, shared_bytes) !=
      cudaSuccess)
    return;
  const std::lock_guard<std::mutex> lock(g_launch_mutex);
  g_sites.emplace(site.file, site.line);
  g_block.site = site;
  race_check_launch(g_block.site);
  t_running_grid = true;
  g_block.thread_body = thread_body;
  g_block.context = context;
  gridDim = grid;
  blockDim = block;
  uint32_t linear_block = 0;
  for (unsigned z = 0; z < grid.z; ++z)
    for (unsigned y = 0; y < grid.y; ++y)
      for (unsigned x = 0; x < grid.x; ++x) {
        blockIdx = uint3{x, y, z};
        run_block(block, linear_block++);
      }
  set_running_thread(nullptr);
  t_running_grid = false;
}

void block_barrier() {
  g_block.current->wait = Wait::block;
  switch_to_scheduler();
}

uint64_t warp_shuffle_down(uint32_t mask, uint64_t bits, unsigned delta,
                           int width) {
  Fiber& self = *g_block.current;
  self.shuffle_mask = mask;
  self.shuffle_bits = bits;
  self.shuffle_delta = delta;
  self.shuffle_width = width;
  self.wait = Wait::warp;
  switch_to_scheduler();
  return self.shuffle_bits;
}

void trap() {
  fail("__trap()");
}

}  // namespace tapeflow::cuda_emu

asm(R"(
    .text
    .globl tapeflow_cuda_emu_switch
    .hidden tapeflow_cuda_emu_switch
    .type tapeflow_cuda_emu_switch, @function
tapeflow_cuda_emu_switch:
    pushq %rbp
    pushq %rbx
    pushq %r12
    pushq %r13
    pushq %r14
    pushq %r15
    subq $8, %rsp
    stmxcsr (%rsp)
    fnstcw 4(%rsp)
    movq %rsp, (%rdi)
    movq %rsi, %rsp
    ldmxcsr (%rsp)
    fldcw 4(%rsp)
    addq $8, %rsp
    popq %r15
    popq %r14
    popq %r13
    popq %r12
    popq %rbx
    popq %rbp
    ret
    .size tapeflow_cuda_emu_switch, .-tapeflow_cuda_emu_switch
)");
