// io::detail::ReadAhead (private): a thread reading a file a few chunks ahead
// of its caller. Its reads come from a function here, so that sizes, errors,
// slow reads and slow callers can be arranged. The same file builds as the
// ThreadSanitizer test read_ahead_tsan, with read_ahead.cpp compiled in.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>

#include "io/read_ahead.hpp"
#include "support/temp_files.hpp"

using tapeflow::io::detail::ReadAhead;
using testing::random_bytes;
using namespace std::chrono_literals;

namespace {

/** Serves `data` in reads of at most `max_read` bytes, as read() may. */
struct Source {
  std::string data;
  size_t max_read = SIZE_MAX;
  size_t pos = 0;
  std::atomic<int> reads{0};

  ReadAhead::ReadFn fn() {
    return [this](unsigned char* dst, size_t n) {
      ++reads;
      const size_t take = std::min({n, max_read, data.size() - pos});
      std::memcpy(dst, data.data() + pos, take);
      pos += take;
      return take;
    };
  }
};

void wait_for_reads(const Source& src, int n) {
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (src.reads.load() < n && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(1ms);
  REQUIRE(src.reads.load() >= n);
}

/** Every chunk next() returns, concatenated, up to the empty one. */
std::string drain(ReadAhead& ahead) {
  std::string out;
  for (auto chunk = ahead.next(); !chunk.empty(); chunk = ahead.next())
    out.append(reinterpret_cast<const char*>(chunk.data()), chunk.size());
  return out;
}

}  // namespace

TEST_CASE("ReadAhead returns the file in order, whatever its size") {
  for (size_t chunks : {1, 2, 4}) {
    for (size_t n : {0, 1, 63, 64, 65, 128, 255, 256, 1000, 4096}) {
      CAPTURE(chunks);
      CAPTURE(n);
      Source src{random_bytes(n, static_cast<uint32_t>(n))};
      ReadAhead ahead(src.fn(), 64, chunks);
      CHECK(drain(ahead) == src.data);
      CHECK(ahead.next().empty());  // the end stays the end
    }
  }
}

TEST_CASE("ReadAhead: a short read ends the thread; the caller reads on") {
  // The read function fills whole chunks until the end (read_file loops
  // over the kernel's short reads): a short one ends the thread, and the
  // calls after it read on their own thread until a read returns nothing.
  Source src{random_bytes(300, 1)};
  src.max_read = 100;
  ReadAhead ahead(src.fn(), 256, 2);
  const auto first = ahead.next();
  CHECK(first.size() == 100);
  CHECK(src.reads.load() == 1);
  CHECK(drain(ahead) == src.data.substr(100));
  CHECK(src.reads.load() == 4);
}

TEST_CASE("ReadAhead: chunks are page-aligned") {
  Source src{random_bytes(10000, 2)};
  ReadAhead ahead(src.fn(), 4096, 3);
  for (auto chunk = ahead.next(); !chunk.empty(); chunk = ahead.next())
    CHECK(reinterpret_cast<uintptr_t>(chunk.data()) % 4096 == 0);
}

TEST_CASE("ReadAhead: an error follows the chunks read before it") {
  const std::string data = random_bytes(64 * 5, 3);
  size_t pos = 0;
  ReadAhead ahead(
      [&](unsigned char* dst, size_t n) -> size_t {
        if (pos == 64 * 3) throw std::runtime_error("disk on fire");
        std::memcpy(dst, data.data() + pos, n);
        pos += n;
        return n;
      },
      64, 2);
  std::string got;
  for (int i = 0; i < 3; ++i) {
    const auto chunk = ahead.next();
    REQUIRE(chunk.size() == 64);
    got.append(reinterpret_cast<const char*>(chunk.data()), chunk.size());
  }
  CHECK(got == data.substr(0, 64 * 3));
  CHECK_THROWS_WITH_AS(ahead.next(), "disk on fire", std::runtime_error);
  CHECK_THROWS_WITH_AS(ahead.next(), "disk on fire", std::runtime_error);
}

TEST_CASE("ReadAhead stops while the thread waits or reads") {
  SUBCASE("the ring is full and its caller holds a chunk") {
    Source src{random_bytes(64 * 100, 4)};
    {
      ReadAhead ahead(src.fn(), 64, 4);
      wait_for_reads(src, 4);
      std::this_thread::sleep_for(20ms);
      CHECK(src.reads.load() == 4);  // the ring full and no further
      CHECK(ahead.next().size() == 64);
      std::this_thread::sleep_for(20ms);
      CHECK(src.reads.load() == 4);  // the chunk returned is still in use
    }
  }
  SUBCASE("in the middle of a slow read") {
    std::atomic<bool> reading{false};
    const auto start = std::chrono::steady_clock::now();
    {
      ReadAhead ahead(
          [&](unsigned char* dst, size_t n) {
            reading = true;
            std::this_thread::sleep_for(50ms);
            std::memset(dst, 0, n);
            return n;
          },
          64, 2);
      while (!reading) std::this_thread::yield();
    }
    CHECK(std::chrono::steady_clock::now() - start < 5s);
  }
}

TEST_CASE("ReadAhead: slow and fast callers against slow and fast reads") {
  // Either side may be the one that waits; the bytes come out the same.
#ifdef TPF_TSAN
  constexpr size_t kBytes = 64 * 400;
#else
  constexpr size_t kBytes = 64 * 4000;
#endif
  for (int slow_side = 0; slow_side < 3; ++slow_side) {
    CAPTURE(slow_side);
    const std::string data = random_bytes(kBytes + 17, slow_side);
    std::mt19937 rng(static_cast<uint32_t>(slow_side));
    size_t pos = 0;
    ReadAhead ahead(
        [&](unsigned char* dst, size_t n) {
          if (slow_side == 0 && pos % 640 == 0)
            std::this_thread::sleep_for(100us);
          const size_t take = std::min(n, data.size() - pos);
          std::memcpy(dst, data.data() + pos, take);
          pos += take;
          return take;
        },
        64, 4, /*judged=*/false);  // two threads to the end, whatever the pace
    std::string got;
    for (auto chunk = ahead.next(); !chunk.empty(); chunk = ahead.next()) {
      if (slow_side == 1 && rng() % 8 == 0) std::this_thread::sleep_for(100us);
      got.append(reinterpret_cast<const char*>(chunk.data()), chunk.size());
    }
    CHECK(got == data);
  }
}

TEST_CASE("ReadAhead: after the end, each call reads again") {
  // A file still being written: what it gained since is read on the
  // caller's thread, as without read-ahead.
  Source src{random_bytes(100, 7)};
  ReadAhead ahead(src.fn(), 64, 2);
  CHECK(drain(ahead) == src.data);
  src.data += random_bytes(150, 8);
  CHECK(drain(ahead) == src.data.substr(100));
  CHECK(ahead.next().empty());
}

TEST_CASE("ReadAhead: read_inline hands out what was read, then reads on") {
  for (size_t chunks : {1, 2, 4}) {
    for (int before : {0, 1, 3, 7}) {
      CAPTURE(chunks);
      CAPTURE(before);
      Source src{random_bytes(1000, static_cast<uint32_t>(before))};
      ReadAhead ahead(src.fn(), 64, chunks);
      std::string got;
      for (int i = 0; i < before; ++i) {
        const auto chunk = ahead.next();
        got.append(reinterpret_cast<const char*>(chunk.data()), chunk.size());
      }
      CHECK(ahead.reads_ahead());  // 1000 bytes: before any judgement
      ahead.read_inline();
      CHECK_FALSE(ahead.reads_ahead());
      const int reads = src.reads.load();
      const auto chunk = ahead.next();  // read before, or on this thread
      got.append(reinterpret_cast<const char*>(chunk.data()), chunk.size());
      CHECK(src.reads.load() <= reads + 1);
      ahead.read_inline();  // once stopped, stays stopped
      CHECK(got + drain(ahead) == src.data);
      CHECK(ahead.next().empty());
    }
  }
}

TEST_CASE("ReadAhead: the overlap pays unless the pair ran a fifth slower") {
  // wall, reads, caller's work between chunks (any unit).
  CHECK(ReadAhead::overlap_pays(10, 10, 3));   // the reads' pace: overlapped
  CHECK(ReadAhead::overlap_pays(100, 98, 1));  // a slow disk: overlapped
  CHECK(ReadAhead::overlap_pays(15, 10, 3));   // within a fifth of serial
  CHECK_FALSE(ReadAhead::overlap_pays(16, 10, 3));
  CHECK_FALSE(ReadAhead::overlap_pays(19, 10, 3));  // both on one CPU
}

TEST_CASE("ReadAhead: no chunks, or chunks of no bytes, are refused") {
  Source src{"abc"};
  CHECK_THROWS_AS(ReadAhead(src.fn(), 0, 2), std::invalid_argument);
  CHECK_THROWS_AS(ReadAhead(src.fn(), 64, 0), std::invalid_argument);
}
