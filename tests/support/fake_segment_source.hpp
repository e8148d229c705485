#pragma once
// A device for the memory allocators' white-box tests (test_bfc,
// test_device_arena): fake addresses, so an 80 GiB device costs nothing.
#include <doctest/doctest.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>

#include "core/bfc_arena.hpp"

namespace testing {

/** Hands out address ranges that nothing backs, with gaps between them. */
class FakeSource final : public tapeflow::SegmentSource {
 public:
  FakeSource(size_t total, size_t free) : total_(total), free_(free) {}
  void* allocate(size_t bytes) override {
    if (bytes > free_ || bytes > refuse_above) return nullptr;
    const uintptr_t p = next_;
    next_ += bytes + (size_t{64} << 10);
    free_ -= bytes;
    live[p] = bytes;
    return reinterpret_cast<void*>(p);
  }
  void release(void* p, size_t bytes) override {
    const auto it = live.find(reinterpret_cast<uintptr_t>(p));
    CHECK(it != live.end());  // no REQUIRE: ~BfcArena releases too
    if (it == live.end()) return;
    CHECK(it->second == bytes);
    live.erase(it);
    free_ += bytes;
  }
  size_t total_bytes() const override { return total_; }
  size_t free_bytes() const override { return free_; }
  void synchronize() override { ++syncs; }
  std::string device_name() const override { return "fake:0"; }

  std::map<uintptr_t, size_t> live;
  size_t refuse_above = SIZE_MAX;
  int syncs = 0;

 private:
  size_t total_, free_;
  uintptr_t next_ = uintptr_t{1} << 44;
};

}  // namespace testing
