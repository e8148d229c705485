// The CUDA emulator's race check. tools/cuda_emu/racecheck builds the
// emulated backend with -fsanitize=thread, which puts a call before each of
// the kernels' loads and stores; this file, in place of ThreadSanitizer's
// runtime, receives those calls. ThreadSanitizer itself cannot judge a
// kernel: a block's threads are fibers of one host thread, and what orders
// them is CUDA's rule, not the host's. A __syncthreads orders the threads of
// a block, and a whole-warp shuffle is taken to order the lanes of a warp,
// as a __syncwarp does (CUDA promises no memory order for a shuffle: a race
// across one is missed). Nothing orders two blocks of one launch. Launches
// run, and are checked, one at a time: races between kernels of different
// streams are not seen.
//
// Why the clocks suffice: a barrier cannot release while a thread of the
// block waits at a shuffle, so the live threads of a block share one count of
// barriers; a whole-warp shuffle cannot complete once a lane has exited, so
// the lanes of a warp share one count of shuffles.
//
// A launch's accesses are kept by the address each starts at: the last write
// there, and three reads since (the latest, the latest by another thread,
// the latest from another block). A write races with a write or read that is
// not ordered before it, a read with such a write; two atomics never race,
// and a volatile access counts as one (PTX makes it a relaxed atomic).
// Atomics order nothing else, and __threadfence is not modelled: a flag
// published by a fence and an atomic reads as a race. Shared memory (the
// kernels' statics, in the module's writable segment) is fresh for each
// block, and a thread's own stack is not looked at. The first race aborts
// the process, naming the launch and both accesses' lines.
//
// What it misses: two accesses that overlap without starting at one address
// (a float4 against a float inside it); reads older than the three kept
// (lane 40's read is dropped once lanes 1 and 2 read after it, and lane 0's
// write after a shuffle then races with nothing kept); warp-synchronous code
// through volatile shared memory; races between blocks on a __device__
// global, which lives with the statics and is taken for shared memory;
// copies through a memcpy call; and a launch's locations past the first
// 2^19 (a table of 2^20 cells of 112 bytes), which the line printed at exit
// counts.
#include "racecheck.hpp"

#include <cxxabi.h>
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <pthread.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

namespace tapeflow::cuda_emu {

namespace {

// The running GPU thread and its host thread, whose accesses alone count.
std::atomic<const ThreadClock*> g_running{nullptr};
std::atomic<pthread_t> g_launcher{};

const ThreadClock* running_here() {
  const ThreadClock* clock = g_running.load(std::memory_order_acquire);
  return clock != nullptr &&
                 pthread_equal(g_launcher.load(std::memory_order_relaxed),
                               pthread_self())
             ? clock
             : nullptr;
}

constexpr uint32_t kWarp = 32;
constexpr int kFirstBits = 16, kMostBits = 20;
// Half the cells at most are taken, so that probes stay short.
constexpr size_t kMostLocations = size_t(1) << (kMostBits - 1);

// One access: a thread of the launch, its clock then, where in the code.
struct Stamp {
  const void* pc = nullptr;  // null: none
  uint32_t block = 0;
  uint16_t thread = 0;  // a block has at most 1024
  bool atomic = false;
  uint32_t barriers = 0, shuffles = 0;
};

struct Cell {
  uintptr_t address = 0;
  uint32_t launch = 0;  // not the current launch's: empty
  uint32_t block = 0;   // of the last access; shared memory is per block
  Stamp write;
  Stamp reads[3];  // latest, latest by another thread, from another block
};

struct State {
  bool enabled = false;  // set by the instrumented code's __tsan_init
  const Site* site = nullptr;
  uint32_t launch = 0;
  std::vector<Cell> cells;
  int bits = 0;  // cells.size() == 2^bits
  size_t live = 0;
  bool full = false;
  // The writable segments of the object the kernels are in.
  std::vector<std::pair<uintptr_t, uintptr_t>> shared;
  unsigned long long launches = 0, accesses = 0, launches_in_part = 0;
};
// Constant-initialized, since the instrumented code's constructors call
// __tsan_init before any other static is made; never destroyed, since the
// summary it registers at exit runs after later statics' destructors.
union Forever {
  State state;
  constexpr Forever() : state() {}
  ~Forever() {}
};
constinit Forever g_forever;
State& g = g_forever.state;

bool ordered(const Stamp& before, const ThreadClock& now) {
  return before.block == now.block &&
         (before.thread == now.thread || before.barriers < now.barriers ||
          (before.thread / kWarp == now.thread / kWarp &&
           before.shuffles < now.shuffles));
}

bool races(const Stamp& before, const ThreadClock& now, bool atomic) {
  return before.pc != nullptr && !ordered(before, now) &&
         !(before.atomic && atomic);
}

// Fibonacci hashing: the product's top bits.
size_t slot_of(uintptr_t address) {
  return size_t((address * 0x9E3779B97F4A7C15ull) >> (64 - g.bits));
}

void grow() {
  std::vector<Cell> old = std::move(g.cells);
  ++g.bits;
  g.cells.assign(size_t(1) << g.bits, Cell{});
  const size_t mask = g.cells.size() - 1;
  for (const Cell& cell : old) {
    if (cell.launch != g.launch) continue;
    size_t i = slot_of(cell.address);
    while (g.cells[i].launch == g.launch) i = (i + 1) & mask;
    g.cells[i] = cell;
  }
}

// The cell of `address` in this launch, made if new; null once the launch
// has kMostLocations.
Cell* cell_of(uintptr_t address) {
  if (g.live * 2 >= g.cells.size() && g.bits < kMostBits) grow();
  const size_t mask = g.cells.size() - 1;
  for (size_t i = slot_of(address);; i = (i + 1) & mask) {
    Cell& cell = g.cells[i];
    if (cell.launch == g.launch) {
      if (cell.address == address) return &cell;
      continue;
    }
    if (g.live >= kMostLocations) {
      g.launches_in_part += !g.full;
      g.full = true;
      return nullptr;
    }
    cell = Cell{};
    cell.address = address;
    cell.launch = g.launch;
    ++g.live;
    return &cell;
  }
}

bool is_shared(uintptr_t address) {
  for (const auto& [begin, end] : g.shared)
    if (address >= begin && address < end) return true;
  return false;
}

// "cuda/reduce.cu:88" by addr2line over the line tables that the
// race-checked build keeps (-g1, which has no inlining: a function's name
// would be the launch's wrapper); the symbol without them.
std::string where(const void* pc) {
  Dl_info info;
  if (dladdr(pc, &info) == 0 || info.dli_fname == nullptr) return "?";
  uintptr_t address = reinterpret_cast<uintptr_t>(pc) - 1;
  const auto* header = static_cast<const ElfW(Ehdr)*>(info.dli_fbase);
  if (header->e_type != ET_EXEC) address -= uintptr_t(info.dli_fbase);
  char hex[32];  // addr2line reads an address as hex
  std::snprintf(hex, sizeof hex, "%zx", size_t(address));
  const std::string command = "addr2line -e '" + std::string(info.dli_fname) +
                              "' " + hex + " 2>/dev/null";
  std::string line;
  if (FILE* out = popen(command.c_str(), "r")) {
    char text[4096];
    if (std::fgets(text, sizeof text, out)) line = text;
    pclose(out);
  }
  while (!line.empty() && line.back() == '\n') line.pop_back();
  // "path:line (discriminator n)" from build/../cuda/x.cu
  line = line.substr(0, line.find(' '));
  if (!line.empty() && line.rfind("??", 0) != 0)
    return std::filesystem::path(line).lexically_normal().string();
  if (info.dli_sname == nullptr) return "?";
  int status = 0;
  char* name = abi::__cxa_demangle(info.dli_sname, nullptr, nullptr, &status);
  std::string symbol = status == 0 ? name : info.dli_sname;
  std::free(name);
  return symbol;
}

std::string coordinates(uint32_t linear, dim3 extent) {
  return "(" + std::to_string(linear % extent.x) + ", " +
         std::to_string(linear / extent.x % extent.y) + ", " +
         std::to_string(linear / (extent.x * extent.y)) + ")";
}

std::string verb(bool write, bool atomic, bool past) {
  const std::string plain =
      write ? (past ? "wrote" : "writes") : (past ? "read" : "reads");
  return atomic ? "atomically " + plain : plain;
}

[[noreturn]] void report(uintptr_t address, size_t bytes, bool shared,
                         const Stamp& before, bool before_wrote,
                         const ThreadClock& now, bool now_writes,
                         bool now_atomic, const void* pc) {
  const bool same_block = before.block == now.block;
  std::fprintf(
      stderr,
      "cuda emulator: a data race on %s memory in the kernel launched at "
      "%s:%d\n"
      "  thread %s of block %s %s %zu bytes at %#zx\n    at %s\n"
      "  after thread %s of %s %s them\n    at %s\n  %s\n",
      shared ? "shared" : "device", g.site->file, g.site->line,
      coordinates(now.thread, blockDim).c_str(),
      coordinates(now.block, gridDim).c_str(),
      verb(now_writes, now_atomic, false).c_str(), bytes, size_t(address),
      where(pc).c_str(), coordinates(before.thread, blockDim).c_str(),
      same_block ? "the same block"
                 : ("block " + coordinates(before.block, gridDim)).c_str(),
      verb(before_wrote, before.atomic, true).c_str(), where(before.pc).c_str(),
      same_block ? "and nothing orders the two: no __syncthreads (or, "
                   "within a warp, whole-warp shuffle) between, and not both "
                   "atomic"
                 : "and nothing orders the two: blocks of one launch are "
                   "unordered, and not both atomic");
  std::abort();
}

void access(const void* address, size_t bytes, bool write, bool atomic,
            const void* pc) {
  const ThreadClock* now = running_here();
  if (now == nullptr || !g.enabled) return;
  const char* byte = static_cast<const char*>(address);
  if (byte >= now->stack_begin && byte < now->stack_end) return;
  ++g.accesses;
  const auto where_at = reinterpret_cast<uintptr_t>(address);
  Cell* cell = cell_of(where_at);
  if (cell == nullptr) return;
  const bool shared = is_shared(where_at);
  if (shared && cell->block != now->block) {
    cell->write = Stamp{};
    for (Stamp& read : cell->reads) read = Stamp{};
  }
  cell->block = now->block;
  if (races(cell->write, *now, atomic))
    report(where_at, bytes, shared, cell->write, true, *now, write, atomic, pc);
  const Stamp stamp{pc,     now->block,    uint16_t(now->thread),
                    atomic, now->barriers, now->shuffles};
  Stamp& latest = cell->reads[0];
  if (write) {
    for (const Stamp& read : cell->reads)
      if (races(read, *now, atomic))
        report(where_at, bytes, shared, read, false, *now, write, atomic, pc);
    cell->write = stamp;
    for (Stamp& read : cell->reads) read = Stamp{};
  } else if (latest.pc == nullptr ||
             (latest.block == now->block && latest.thread == now->thread)) {
    latest = stamp;
  } else {
    if (latest.block != now->block) cell->reads[2] = latest;
    cell->reads[1] = latest;
    latest = stamp;
  }
}

// The writable segments of the object this file is linked into, which are
// the kernels' too: their statics are shared memory.
int find_shared(dl_phdr_info* info, size_t, void*) {
  const auto self = reinterpret_cast<uintptr_t>(&g);
  std::vector<std::pair<uintptr_t, uintptr_t>> writable;
  bool mine = false;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& segment = info->dlpi_phdr[i];
    if (segment.p_type != PT_LOAD || !(segment.p_flags & PF_W)) continue;
    const uintptr_t begin = info->dlpi_addr + segment.p_vaddr;
    writable.emplace_back(begin, begin + segment.p_memsz);
    mine = mine || (self >= begin && self < begin + segment.p_memsz);
  }
  if (!mine) return 0;
  g.shared = std::move(writable);
  return 1;
}

// At exit, where anything was launched (a process that launched nothing,
// such as a test's child, keeps its output as it was).
void print_summary() {
  if (g.launches == 0) return;
  std::fprintf(stderr,
               "cuda emulator race check: %llu launches, %llu accesses "
               "checked",
               g.launches, g.accesses);
  if (g.launches_in_part != 0)
    std::fprintf(stderr, "; %llu launches checked up to 2^19 locations",
                 g.launches_in_part);
  std::fprintf(stderr, "\n");
}

}  // namespace

void set_running_thread(const ThreadClock* clock) {
  g_launcher.store(pthread_self(), std::memory_order_relaxed);
  g_running.store(clock, std::memory_order_release);
}

void race_check_launch(const Site& site) {
  if (!g.enabled) return;
  if (g.shared.empty()) dl_iterate_phdr(find_shared, nullptr);
  if (g.cells.empty()) {
    g.bits = kFirstBits;
    g.cells.assign(size_t(1) << g.bits, Cell{});
  }
  g.full = false;
  g.site = &site;
  ++g.launch;
  ++g.launches;
  g.live = 0;
}

void race_check_atomic(const void* address, size_t bytes, const void* pc) {
  if (g.enabled) access(address, bytes, true, true, pc);
}

}  // namespace tapeflow::cuda_emu

// What -fsanitize=thread compiles calls to, visible only inside the module.
// A volatile access is a relaxed atomic in PTX, and is taken as one.
namespace emu = tapeflow::cuda_emu;
#define TSAN_ENTRY extern "C" __attribute__((visibility("hidden"))) void
#define TSAN_ACCESS(size)                                            \
  TSAN_ENTRY __tsan_read##size(void* a) {                            \
    emu::access(a, size, false, false, __builtin_return_address(0)); \
  }                                                                  \
  TSAN_ENTRY __tsan_write##size(void* a) {                           \
    emu::access(a, size, true, false, __builtin_return_address(0));  \
  }                                                                  \
  TSAN_ENTRY __tsan_unaligned_read##size(void* a) {                  \
    emu::access(a, size, false, false, __builtin_return_address(0)); \
  }                                                                  \
  TSAN_ENTRY __tsan_unaligned_write##size(void* a) {                 \
    emu::access(a, size, true, false, __builtin_return_address(0));  \
  }                                                                  \
  TSAN_ENTRY __tsan_volatile_read##size(void* a) {                   \
    emu::access(a, size, false, true, __builtin_return_address(0));  \
  }                                                                  \
  TSAN_ENTRY __tsan_volatile_write##size(void* a) {                  \
    emu::access(a, size, true, true, __builtin_return_address(0));   \
  }
TSAN_ACCESS(1)
TSAN_ACCESS(2)
TSAN_ACCESS(4)
TSAN_ACCESS(8)
TSAN_ACCESS(16)
TSAN_ENTRY __tsan_read_range(void* a, size_t size) {
  emu::access(a, size, false, false, __builtin_return_address(0));
}
TSAN_ENTRY __tsan_write_range(void* a, size_t size) {
  emu::access(a, size, true, false, __builtin_return_address(0));
}
TSAN_ENTRY __tsan_init() {
  if (!emu::g.enabled) std::atexit(emu::print_summary);
  emu::g.enabled = true;
}
TSAN_ENTRY __tsan_func_entry(void*) {}
TSAN_ENTRY __tsan_func_exit() {}
TSAN_ENTRY __tsan_vptr_update(void**, void*) {}
TSAN_ENTRY __tsan_vptr_read(void**) {}
TSAN_ENTRY __tsan_atomic_thread_fence(int) {
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
}
TSAN_ENTRY __tsan_atomic_signal_fence(int) {
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
}

// The host side's std::atomic operations, done as asked (sequentially
// consistent, whatever order was asked: never weaker).
#define TSAN_ATOMIC(bits, T)                                                  \
  extern "C" __attribute__((visibility("hidden")))                            \
  T __tsan_atomic##bits##_load(const volatile T* a, int) {                    \
    return __atomic_load_n(a, __ATOMIC_SEQ_CST);                              \
  }                                                                           \
  TSAN_ENTRY __tsan_atomic##bits##_store(volatile T* a, T v, int) {           \
    __atomic_store_n(a, v, __ATOMIC_SEQ_CST);                                 \
  }                                                                           \
  extern "C" __attribute__((visibility("hidden"))) int                        \
      __tsan_atomic##bits##_compare_exchange_strong(volatile T* a, T* c, T v, \
                                                    int, int) {               \
    return __atomic_compare_exchange_n(a, c, v, false, __ATOMIC_SEQ_CST,      \
                                       __ATOMIC_SEQ_CST);                     \
  }                                                                           \
  extern "C" __attribute__((visibility("hidden"))) int                        \
      __tsan_atomic##bits##_compare_exchange_weak(volatile T* a, T* c, T v,   \
                                                  int, int) {                 \
    return __atomic_compare_exchange_n(a, c, v, true, __ATOMIC_SEQ_CST,       \
                                       __ATOMIC_SEQ_CST);                     \
  }                                                                           \
  extern "C" __attribute__((visibility("hidden")))                            \
  T __tsan_atomic##bits##_compare_exchange_val(volatile T* a, T c, T v, int,  \
                                               int) {                         \
    __atomic_compare_exchange_n(a, &c, v, false, __ATOMIC_SEQ_CST,            \
                                __ATOMIC_SEQ_CST);                            \
    return c;                                                                 \
  }                                                                           \
  TSAN_RMW(bits, T, exchange, __atomic_exchange_n)                            \
  TSAN_RMW(bits, T, fetch_add, __atomic_fetch_add)                            \
  TSAN_RMW(bits, T, fetch_sub, __atomic_fetch_sub)                            \
  TSAN_RMW(bits, T, fetch_and, __atomic_fetch_and)                            \
  TSAN_RMW(bits, T, fetch_or, __atomic_fetch_or)                              \
  TSAN_RMW(bits, T, fetch_xor, __atomic_fetch_xor)                            \
  TSAN_RMW(bits, T, fetch_nand, __atomic_fetch_nand)
#define TSAN_RMW(bits, T, name, builtin)                    \
  extern "C" __attribute__((visibility("hidden")))          \
  T __tsan_atomic##bits##_##name(volatile T* a, T v, int) { \
    return builtin(a, v, __ATOMIC_SEQ_CST);                 \
  }
TSAN_ATOMIC(8, int8_t)
TSAN_ATOMIC(16, int16_t)
TSAN_ATOMIC(32, int32_t)
TSAN_ATOMIC(64, int64_t)
