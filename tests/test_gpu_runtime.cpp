// The host-side bookkeeping of the CUDA runtime, without CUDA (CUDA.md §3):
// pinned staging over a fake stream whose copies run only when an event is
// waited on (so a block reused too early, or a source read too late, shows
// up as wrong bytes), deferred data errors, and the placement log's line for
// a GPU. White-box.
#include <doctest/doctest.h>

#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <numeric>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#include "core/deferred_error_record.hpp"
#include "core/device_init_line.hpp"
#include "core/pinned_staging.hpp"
#include "support/check.hpp"
#include "tapeflow/core/error.hpp"

using tpf::PinnedStaging;
using tpf::StagingLimits;

namespace {

/** What outlives the source (PinnedStaging owns and destroys it). */
struct Ledger {
  std::set<void*> blocks;  // pinned blocks allocated, not released
  int events = 0;          // events created, not destroyed
  int wrong_device = 0;    // events recorded on another device's stream
};

/**
 * One in-order queue standing for every device's stream; a copy runs when
 * an event recorded after it is waited on, or at run_all().
 */
class FakeStream final : public tpf::StagingSource {
 public:
  explicit FakeStream(Ledger& ledger) : ledger_(ledger) {}
  void* allocate(size_t bytes) override {
    std::lock_guard lock(mu_);
    void* p = new char[bytes];
    ledger_.blocks.insert(p);
    return p;
  }
  void release(void* block, size_t) override {
    std::lock_guard lock(mu_);
    CHECK(ledger_.blocks.erase(block) == 1);
    delete[] static_cast<char*>(block);
  }
  Event create_event(int device) override {
    std::lock_guard lock(mu_);
    if (fail_events) throw std::runtime_error("no event");
    ++ledger_.events;
    return new FakeEvent{device, 0};
  }
  void destroy_event(Event event, int device) override {
    std::lock_guard lock(mu_);
    CHECK(static_cast<FakeEvent*>(event)->device == device);
    --ledger_.events;
    delete static_cast<FakeEvent*>(event);
  }
  void record(Event event, int device) override {
    std::lock_guard lock(mu_);
    auto* e = static_cast<FakeEvent*>(event);
    if (e->device != device) ++ledger_.wrong_device;
    e->after = queued_.size();
  }
  bool done(Event event) override {
    std::lock_guard lock(mu_);
    return ran_ >= static_cast<FakeEvent*>(event)->after;
  }
  void wait(Event event) override {
    std::lock_guard lock(mu_);
    run_until(static_cast<FakeEvent*>(event)->after);
  }
  void copy_to_device_async(const void* pinned, void* dst, size_t bytes,
                            int) override {
    std::lock_guard lock(mu_);
    if (fail_copies) throw std::runtime_error("no copy");
    queued_.push_back([=] { std::memcpy(dst, pinned, bytes); });
  }
  void copy_to_host_async(const void* src, void* pinned, size_t bytes,
                          int) override {
    std::lock_guard lock(mu_);
    queued_.push_back([=] { std::memcpy(pinned, src, bytes); });
  }
  void run_all() {
    std::lock_guard lock(mu_);
    run_until(queued_.size());
  }
  bool fail_events = false;  // create_event throws, as cudaEventCreate may
  bool fail_copies = false;  // copy_to_device_async throws before queueing

 private:
  struct FakeEvent {
    int device;
    size_t after;  // copies queued before the record
  };
  void run_until(size_t n) {
    for (; ran_ < n; ++ran_) queued_[ran_]();
  }

  Ledger& ledger_;
  std::mutex mu_;
  std::vector<std::function<void()>> queued_;
  size_t ran_ = 0;
};

/** Small sizes, so chunking and the cap show with a few bytes. */
constexpr StagingLimits kSmall{
    .min_block = 16, .chunked_from = 64, .chunk = 16, .max_cached = 64};

struct Staging {
  explicit Staging(StagingLimits limits = kSmall)
      : stream(new FakeStream(ledger)),
        staging(std::make_unique<PinnedStaging>(
            std::unique_ptr<tpf::StagingSource>(stream), limits)) {}
  Ledger ledger;
  FakeStream* stream;  // owned by staging
  std::unique_ptr<PinnedStaging> staging;
};

std::vector<unsigned char> bytes_from(unsigned char first, size_t n) {
  std::vector<unsigned char> v(n);
  std::iota(v.begin(), v.end(), first);
  return v;
}

}  // namespace

TEST_CASE("a copy to the device returns before the DMA; the source may go") {
  Staging s;
  std::vector<unsigned char> device(40, 0);
  {
    auto source = bytes_from(1, 40);
    s.staging->to_device(source.data(), device.data(), 40, 0);
    std::fill(source.begin(), source.end(), 0xEE);  // then freed
  }
  CHECK(device == std::vector<unsigned char>(40, 0));  // nothing ran yet
  s.stream->run_all();
  CHECK(device == bytes_from(1, 40));
}

TEST_CASE("a busy block is not handed out again; a finished one is") {
  Staging s;
  std::vector<unsigned char> a(10), b(10), c(10);
  const auto x = bytes_from(1, 10), y = bytes_from(50, 10),
             z = bytes_from(90, 10);
  s.staging->to_device(x.data(), a.data(), 10, 0);
  s.staging->to_device(y.data(), b.data(), 10, 0);
  CHECK(s.staging->stats().num_allocations == 2);
  s.stream->run_all();
  CHECK(a == x);
  CHECK(b == y);
  s.staging->to_device(z.data(), c.data(), 10, 0);
  s.stream->run_all();
  CHECK(c == z);
  const tpf::StagingStats st = s.staging->stats();
  CHECK(st.num_allocations == 2);
  CHECK(st.blocks == 2);
  CHECK(st.held_bytes == 32);
  CHECK(st.num_waits == 0);
}

TEST_CASE("a copy to the host waits for the work queued before it") {
  Staging s;
  std::vector<unsigned char> device(30, 0), host(30, 0);
  const auto x = bytes_from(7, 30);
  s.staging->to_device(x.data(), device.data(), 30, 0);  // still queued
  s.staging->to_host(device.data(), host.data(), 30, 0);
  CHECK(host == x);
}

TEST_CASE("large copies go in chunks through two blocks, both ways") {
  Staging s;
  const size_t n = 200;  // 13 chunks of 16 bytes
  const auto x = bytes_from(3, n);
  std::vector<unsigned char> device(n, 0), host(n, 0);
  s.staging->to_device(x.data(), device.data(), n, 0);
  CHECK(s.staging->stats().num_allocations == 2);
  s.stream->run_all();
  CHECK(device == x);
  s.staging->to_host(device.data(), host.data(), n, 0);
  CHECK(host == x);
  CHECK(s.staging->stats().num_allocations == 2);
  CHECK(s.staging->stats().held_bytes == 32);
}

TEST_CASE("a block whose copy failed after its DMA was queued is not reused") {
  Staging s;
  const auto first = bytes_from(1, 32), second = bytes_from(100, 32);
  std::vector<unsigned char> dst1(32), dst2(32);
  s.stream->fail_events = true;
  CHECK_THROWS_AS(s.staging->to_device(first.data(), dst1.data(), 32, 0),
                  std::runtime_error);
  s.stream->fail_events = false;
  s.staging->to_device(second.data(), dst2.data(), 32, 0);
  s.stream->run_all();
  CHECK(dst1 == first);
  CHECK(dst2 == second);
  CHECK(s.staging->stats().num_allocations == 2);
}

TEST_CASE("a block whose copy failed before any DMA is handed out again") {
  Staging s;
  const auto data = bytes_from(1, 32);
  std::vector<unsigned char> dst(32);
  s.stream->fail_copies = true;
  CHECK_THROWS_AS(s.staging->to_device(data.data(), dst.data(), 32, 0),
                  std::runtime_error);
  s.stream->fail_copies = false;
  s.staging->to_device(data.data(), dst.data(), 32, 0);
  s.stream->run_all();
  CHECK(dst == data);
  CHECK(s.staging->stats().num_allocations == 1);
}

TEST_CASE("the cap on pinned bytes: wait for the oldest busy block") {
  Staging s;  // 64 bytes: four 16-byte blocks
  std::vector<std::vector<unsigned char>> device(6,
                                                 std::vector<unsigned char>(8));
  for (int i = 0; i < 6; ++i) {
    const auto x = bytes_from(static_cast<unsigned char>(10 * i), 8);
    s.staging->to_device(x.data(), device[i].data(), 8, 0);
  }
  const tpf::StagingStats st = s.staging->stats();
  CHECK(st.num_allocations == 4);
  CHECK(st.num_waits == 2);
  CHECK(st.held_bytes == 64);
  s.stream->run_all();
  for (int i = 0; i < 6; ++i)
    CHECK(device[i] == bytes_from(static_cast<unsigned char>(10 * i), 8));
}

TEST_CASE("the cap: idle blocks of other sizes make room for a larger one") {
  Staging s;
  std::vector<unsigned char> small(16), large(48);
  const auto x = bytes_from(1, 16), y = bytes_from(100, 48);
  for (int i = 0; i < 3; ++i)  // three 16-byte blocks, all busy
    s.staging->to_device(x.data(), small.data(), 16, 0);
  CHECK(s.staging->stats().held_bytes == 48);
  s.staging->to_device(y.data(), large.data(), 48, 0);  // a 64-byte block
  const tpf::StagingStats st = s.staging->stats();
  CHECK(st.held_bytes == 64);
  CHECK(st.num_releases == 3);
  CHECK(st.num_waits == 3);
  s.stream->run_all();
  CHECK(small == x);
  CHECK(large == y);
}

TEST_CASE("a block's event belongs to the device of its last copy") {
  Staging s;
  std::vector<unsigned char> d0(8), d1(8);
  const auto x = bytes_from(1, 8);
  s.staging->to_device(x.data(), d0.data(), 8, 0);
  s.stream->run_all();
  s.staging->to_device(x.data(), d1.data(), 8, 1);  // the same block
  s.stream->run_all();
  CHECK(s.staging->stats().num_allocations == 1);
  CHECK(s.ledger.wrong_device == 0);
  CHECK(s.ledger.events == 1);
  CHECK(d1 == x);
}

TEST_CASE("destroying the staging waits for its DMA and frees everything") {
  Staging s;
  std::vector<unsigned char> device(100, 0);
  const auto x = bytes_from(1, 100);
  s.staging->to_device(x.data(), device.data(), 100, 0);
  s.staging.reset();
  CHECK(device == x);
  CHECK(s.ledger.blocks.empty());
  CHECK(s.ledger.events == 0);
}

TEST_CASE("staging from several threads keeps every copy's bytes") {
  Staging s(StagingLimits{
      .min_block = 16, .chunked_from = 64, .chunk = 16, .max_cached = 128});
  std::vector<std::thread> threads;
  std::vector<int> bad(4, 0);
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 200; ++i) {
        const size_t n = 1 + (i * 37 + t * 11) % 150;
        const auto x = bytes_from(static_cast<unsigned char>(i + t), n);
        std::vector<unsigned char> device(n, 0), host(n, 0);
        s.staging->to_device(x.data(), device.data(), n, t % 2);
        s.staging->to_host(device.data(), host.data(), n, t % 2);
        bad[t] += host != x;
      }
    });
  for (auto& th : threads) th.join();
  CHECK(bad == std::vector<int>(4, 0));
  CHECK(s.ledger.wrong_device == 0);
}

TEST_CASE("deferred data errors: the message and the record's life") {
  CHECK(tpf::deferred_index_message("gather", 0, 10, 12, "cuda:0") ==
        "[gather] expected indices in [0, 10), got 12 (on cuda:0, reported "
        "at synchronization)");
  tpf::DeferredOpNames names;
  const unsigned gather = names.id("gather"), one_hot = names.id("one_hot");
  CHECK(gather != one_hot);
  CHECK(names.id("gather") == gather);
  CHECK(names.name(one_hot) == "one_hot");
  CHECK(names.name(99) == "unknown op 99");

  // The device's claim flag: set by the kernel thread that reported, cleared
  // by rearm before the throw.
  int flag = 0, rearms = 0;
  const auto rearm = [&] {
    ++rearms;
    flag = 0;
  };
  tpf::DeferredErrorRecord record{};
  tpf::raise_deferred_error(record, names, "cuda:0", rearm);  // none reported
  CHECK(rearms == 0);
  // A thread that claimed the flag but has not yet set `claimed` (it is set
  // last): nothing to read yet.
  flag = 1;
  record = {0, one_hot, -3, 0, 5};
  tpf::raise_deferred_error(record, names, "cuda:1", rearm);
  CHECK(rearms == 0);
  record.claimed = 1;
  bool thrown = false;
  try {
    tpf::raise_deferred_error(record, names, "cuda:1", rearm);
  } catch (const tpf::IndexError& e) {
    thrown = true;
    CHECK(std::string(e.what()) ==
          "[one_hot] expected indices in [0, 5), got -3 (on cuda:1, reported "
          "at synchronization)");
  }
  CHECK(thrown);
  // Later kernels report afresh: the record and the flag are clear.
  CHECK(record.claimed == 0);
  CHECK(rearms == 1);
  CHECK(flag == 0);
  tpf::raise_deferred_error(record, names, "cuda:1", rearm);
  CHECK(rearms == 1);
}

TEST_CASE("the placement log's line for a GPU") {
  const tpf::GpuDescription h100{"cuda:0", "NVIDIA H100 80GB HBM3", 9, 0,
                                 size_t(79.1 * double(1 << 30))};
  tpf::config::GpuMemoryOptions options;
  CHECK(tpf::device_init_line(h100, h100.total_bytes, true, options) ==
        "cuda:0: NVIDIA H100 80GB HBM3 (sm_90, 79.1 GiB), limit 79.1 GiB "
        "(fraction 1.0), allow_growth on, BFC");
  options.per_process_gpu_memory_fraction = 0.25;
  CHECK(tpf::device_init_line(h100, h100.total_bytes / 4, false, options) ==
        "cuda:0: NVIDIA H100 80GB HBM3 (sm_90, 79.1 GiB), limit 19.8 GiB "
        "(fraction 0.25), allow_growth off, BFC");
  options.memory_limit_bytes = size_t{8} << 30;
  const tpf::GpuDescription a10{"cuda:1", "NVIDIA A10", 8, 6, size_t{22} << 30};
  CHECK(tpf::device_init_line(a10, size_t{8} << 30, true, options) ==
        "cuda:1: NVIDIA A10 (sm_86, 22.0 GiB), limit 8.0 GiB "
        "(memory_limit_bytes), allow_growth on, BFC");
}
