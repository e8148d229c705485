// Device memory options, statistics and out-of-memory errors through the
// public API, on the host-backed test device: its arena carves host memory
// posing as a 1 GiB GPU (support/device.cpp). The options are per process
// and frozen at the first device allocation, so the cases run in file order.
#include "support/check.hpp"
#include "support/device.hpp"

using testing::expect_error;

namespace {

constexpr size_t MiB = size_t{1} << 20;
const bool kTestDevice = testing::install_host_device();
const tpf::Device kDev = tpf::Device::cuda(0);

}  // namespace

TEST_CASE("options are checked" * doctest::skip(!kTestDevice)) {
  expect_error<tpf::ValueError>(
      [] {
        tpf::config::set_gpu_memory_options(
            {.per_process_gpu_memory_fraction = 1.5});
      },
      "[set_gpu_memory_options] expected per_process_gpu_memory_fraction in "
      "(0, 1], got 1.5");
  expect_error<tpf::ValueError>(
      [] {
        tpf::config::set_gpu_memory_options(
            {.per_process_gpu_memory_fraction = 0.0});
      },
      "[set_gpu_memory_options] expected per_process_gpu_memory_fraction");
  expect_error<tpf::ValueError>(
      [] {
        tpf::config::set_gpu_memory_options(
            {.allocator_type = "cuda_malloc_async"});
      },
      "[set_gpu_memory_options] expected allocator_type \"BFC\" or "
      "\"cuda_malloc\", got \"cuda_malloc_async\"");
  tpf::config::set_gpu_memory_options({.allocator_type = "cuda_malloc"});
  CHECK(tpf::config::gpu_memory_options().allocator_type == "cuda_malloc");
  tpf::config::set_gpu_memory_options({});
  CHECK(tpf::config::gpu_memory_options().per_process_gpu_memory_fraction ==
        1.0);
}

TEST_CASE("before the first allocation nothing is reserved" *
          doctest::skip(!kTestDevice)) {
  const tpf::MemoryStats s = tpf::memory_stats(kDev);
  CHECK(s.reserved_bytes == 0);
  CHECK(s.num_segments == 0);
  // Asking made no arena: the options may still change.
  tpf::config::set_gpu_memory_options({.memory_limit_bytes = 64 * MiB});
  CHECK(tpf::config::gpu_memory_options().memory_limit_bytes == 64 * MiB);
}

TEST_CASE("the arena reserves segments within the limit, and says when out" *
          doctest::skip(!kTestDevice)) {
  const int64_t quarter = 6 * MiB;  // 24 MiB of float32
  {
    const auto x = tpf::ones({quarter}, tpf::float32, kDev);
    tpf::MemoryStats s = tpf::memory_stats(kDev);
    CHECK(s.limit_bytes == 64 * MiB);
    CHECK(s.reserved_bytes == 24 * MiB);
    CHECK(s.allocated_bytes == 24 * MiB);
    CHECK(s.num_segments == 1);
    const auto y = x + x;  // add has a kernel on the test device
    CHECK(y.device() == kDev);
    CHECK(tpf::memory_stats(kDev).reserved_bytes == 48 * MiB);
    expect_error<tpf::ResourceExhaustedError>(
        [&] { (void)(x + y); },
        "[add] expected 24.00 MiB more on cuda:0, got out of memory: in use "
        "48.00 MiB, cached 0 B (largest free 0 B, fragmentation 0%), reserved "
        "48.00 MiB of a 64.00 MiB limit (memory_limit_bytes), device free "
        "976.00 MiB");
    // An out-of-memory error is a DeviceError too.
    expect_error<tpf::DeviceError>([&] { (void)(y + x); }, "[add] expected");
    CHECK(tpf::memory_stats(kDev).num_ooms == 2);
    CHECK(tpf::memory_stats(kDev).peak_reserved_bytes == 48 * MiB);
  }
  // Freed tensors stay cached until empty_cache.
  tpf::MemoryStats s = tpf::memory_stats(kDev);
  CHECK(s.allocated_bytes == 0);
  CHECK(s.cached_bytes == 48 * MiB);
  CHECK(s.largest_free_bytes == 24 * MiB);
  tpf::empty_cache(kDev);
  s = tpf::memory_stats(kDev);
  CHECK(s.reserved_bytes == 0);
  CHECK(s.num_segments == 0);
}

TEST_CASE("options cannot change once the device allocated" *
          doctest::skip(!kTestDevice)) {
  expect_error<tpf::ValueError>(
      [] { tpf::config::set_gpu_memory_options({.allow_growth = false}); },
      "[set_gpu_memory_options] expected a call before any GPU allocates, got "
      "one after");
  CHECK(tpf::config::gpu_memory_options().allow_growth);
}
