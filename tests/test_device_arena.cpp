// A device's allocator as GpuMemoryOptions and TF_GPU_ALLOCATOR choose it
// (src/core/device_arena.hpp), and the cuda_malloc allocator that caches
// nothing (src/core/uncached_allocator.hpp), on a fake device. White-box.
#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <memory>
#include <optional>
#include <string>

#include "core/device_arena.hpp"
#include "core/uncached_allocator.hpp"
#include "support/check.hpp"
#include "support/fake_segment_source.hpp"

using testing::expect_error;
using testing::FakeSource;
using tpf::UncachedAllocator;

namespace {

constexpr size_t MiB = size_t{1} << 20, GiB = size_t{1} << 30;

struct Uncached {
  FakeSource* source;
  std::unique_ptr<UncachedAllocator> allocator;
  explicit Uncached(tpf::config::GpuMemoryOptions o = {}) {
    auto s = std::make_unique<FakeSource>(80 * GiB, 80 * GiB);
    source = s.get();
    allocator = std::make_unique<UncachedAllocator>(std::move(s), o);
  }
  UncachedAllocator* operator->() { return allocator.get(); }
};

uintptr_t at(void* p) {
  return reinterpret_cast<uintptr_t>(p);
}

/** Sets (or, given nullptr, unsets) an environment variable for one scope. */
struct ScopedEnv {
  const char* name;
  std::optional<std::string> before;
  ScopedEnv(const char* name, const char* value) : name(name) {
    if (const char* v = std::getenv(name)) before = v;
    value ? setenv(name, value, 1) : unsetenv(name);
  }
  ~ScopedEnv() { before ? setenv(name, before->c_str(), 1) : unsetenv(name); }
};

/** A DeviceArena over a FakeSource; `device` once the source is made. */
struct Made {
  FakeSource* device = nullptr;
  std::string allocator_type;
  tpf::DeviceArena memory;
  Made()
      : memory([this] { return source(); },
               [this](const tpf::DeviceMemoryPolicy& policy) {
                 allocator_type = policy.options.allocator_type;
               }) {}
  std::unique_ptr<FakeSource> source() {
    auto s = std::make_unique<FakeSource>(80 * GiB, 80 * GiB);
    device = s.get();
    return s;
  }
};

}  // namespace

TEST_CASE("cuda_malloc gives each request a segment of its bytes, at once") {
  Uncached a;
  void* three = a->allocate(3);
  void* none = a->allocate(0);  // one byte: a pointer of its own
  CHECK(a.source->live.at(at(three)) == 3);
  CHECK(a.source->live.at(at(none)) == 1);
  tpf::MemoryStats s = a->stats();
  CHECK(s.allocated_bytes == 4);
  CHECK(s.reserved_bytes == 4);
  CHECK(s.cached_bytes == 0);
  CHECK(s.num_segments == 2);
  CHECK(s.num_allocs == 2);
  CHECK(s.num_fresh == 2);
  CHECK(s.limit_bytes == 80 * GiB);
  a->deallocate(three, 3);
  CHECK(a.source->live.size() == 1);  // returned to the device at once
  a->deallocate(none, 0);
  s = a->stats();
  CHECK(a.source->live.empty());
  CHECK(s.allocated_bytes == 0);
  CHECK(s.reserved_bytes == 0);
  CHECK(s.peak_bytes == 4);
  CHECK(s.peak_reserved_bytes == 4);
}

TEST_CASE("cuda_malloc's limit holds on the bytes in use") {
  Uncached a({.memory_limit_bytes = 10 * MiB});
  void* six = a->allocate(6 * MiB);
  expect_error<tpf::ResourceExhaustedError>(
      [&] { a->allocate(6 * MiB); },
      "[allocate] expected 6.00 MiB more on fake:0, got out of memory: in use "
      "6.00 MiB in 1 allocations of a 10.00 MiB limit (memory_limit_bytes), "
      "device free 79.99 GiB; allocator cuda_malloc, which caches nothing");
  CHECK(a->stats().num_ooms == 1);
  CHECK(a.source->live.size() == 1);
  void* four = a->allocate(4 * MiB);  // to the byte of the limit
  CHECK(a->stats().allocated_bytes == 10 * MiB);
  expect_error<tpf::ResourceExhaustedError>([&] { a->allocate(1); },
                                            "[allocate] expected 1 B more");
  a->deallocate(six, 6 * MiB);
  a->deallocate(four, 4 * MiB);
  a->deallocate(a->allocate(6 * MiB), 6 * MiB);
  CHECK(a.source->live.empty());
}

TEST_CASE("cuda_malloc refuses what the device refuses") {
  Uncached a({.per_process_gpu_memory_fraction = 0.5});
  CHECK(a->limit_bytes() == 40 * GiB);
  a.source->refuse_above = GiB;
  expect_error<tpf::ResourceExhaustedError>(
      [&] { a->allocate(2 * GiB); },
      "[allocate] expected 2.00 GiB more on fake:0, got out of memory: in use "
      "0 B in 0 allocations of a 40.00 GiB limit (fraction 0.5 of 80.00 GiB)");
  CHECK(a->stats().num_ooms == 1);
  CHECK(a->stats().allocated_bytes == 0);
}

TEST_CASE("what a device still holds goes back with its allocator") {
  auto source = std::make_unique<FakeSource>(80 * GiB, 80 * GiB);
  FakeSource* device = source.get();
  {
    UncachedAllocator a(std::move(source), {});
    a.allocate(MiB);
    a.allocate(MiB);
    CHECK(device->free_bytes() == 80 * GiB - 2 * MiB);
  }
  CHECK(device->free_bytes() == 80 * GiB);
}

// allocator_type "cuda_malloc" alone chooses it. In a child process: the
// options freeze at the first DeviceArena's allocation, and the cases below
// need the defaults.
TEST_CASE("allocator_type \"cuda_malloc\" makes a DeviceArena cache nothing") {
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    const ScopedEnv env("TF_GPU_ALLOCATOR", nullptr);
    tpf::config::set_gpu_memory_options({.allocator_type = "cuda_malloc"});
    Made made;
    void* p = made.memory.allocate(3);
    const bool uncached = made.allocator_type == "cuda_malloc" &&
                          made.device->live.at(at(p)) == 3;
    made.memory.deallocate(p, 3);
    _exit(uncached && made.device->live.empty() ? 0 : 1);
  }
  int status = 0;
  REQUIRE(waitpid(child, &status, 0) == child);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
}

// The cases below make DeviceArenas, which freeze the process's options at
// the defaults: TF_GPU_ALLOCATOR is what chooses.
TEST_CASE("a DeviceArena is made at its first allocation and says so once") {
  const ScopedEnv env("TF_GPU_ALLOCATOR", nullptr);
  int told = 0;
  tpf::DeviceMemoryPolicy told_policy;
  tpf::DeviceArena memory(
      [] { return std::make_unique<FakeSource>(80 * GiB, 80 * GiB); },
      [&](const tpf::DeviceMemoryPolicy& policy) {
        ++told;
        told_policy = policy;
      });
  CHECK(memory.stats().reserved_bytes == 0);  // asking makes no arena
  CHECK(told == 0);
  void* a = memory.allocate(MiB);
  void* b = memory.allocate(MiB);
  CHECK(told == 1);
  CHECK(told_policy.options.allocator_type == "BFC");
  CHECK(told_policy.allow_growth);
  CHECK(told_policy.limit_bytes == memory.stats().limit_bytes);
  CHECK(memory.stats().reserved_bytes == 2 * MiB);  // one small segment
  memory.deallocate(a, MiB);
  memory.deallocate(b, MiB);
}

TEST_CASE("TF_GPU_ALLOCATOR=cuda_malloc makes a DeviceArena cache nothing") {
  const ScopedEnv env("TF_GPU_ALLOCATOR", "cuda_malloc");
  CHECK(tpf::resolve_allocator_type("BFC") == "cuda_malloc");
  Made made;
  void* p = made.memory.allocate(3);
  CHECK(made.allocator_type == "cuda_malloc");
  REQUIRE(made.device != nullptr);
  CHECK(made.device->live.at(at(p)) == 3);
  made.memory.deallocate(p, 3);
  CHECK(made.device->live.empty());
  CHECK(made.memory.stats().reserved_bytes == 0);
}

TEST_CASE("any other TF_GPU_ALLOCATOR is a ValueError") {
  {
    const ScopedEnv unset("TF_GPU_ALLOCATOR", nullptr);
    CHECK(tpf::resolve_allocator_type("BFC") == "BFC");
    const ScopedEnv empty("TF_GPU_ALLOCATOR", "");
    CHECK(tpf::resolve_allocator_type("cuda_malloc") == "cuda_malloc");
  }
  const ScopedEnv env("TF_GPU_ALLOCATOR", "cuda_malloc_async");
  const std::string expected =
      "[allocate] expected TF_GPU_ALLOCATOR \"cuda_malloc\" or unset, got "
      "\"cuda_malloc_async\"";
  expect_error<tpf::ValueError>([] { tpf::resolve_allocator_type("BFC"); },
                                expected);
  Made made;
  expect_error<tpf::ValueError>([&] { made.memory.allocate(1); }, expected);
  CHECK(made.device == nullptr);  // refused before the device was asked
}
