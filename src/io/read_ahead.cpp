#include "read_ahead.hpp"

#include <time.h>

#include <chrono>
#include <cstdio>
#include <stdexcept>

namespace tapeflow::io::detail {

namespace {
// How long next() polls for a chunk before it sleeps: about one 256 KiB
// read from the page cache. A sleep and its wake-up cost both threads a
// context switch; TFRecord reading at 2 threads went from 0.63-0.80x to
// 0.77-0.83x of a bare read() loop with it (Zen 3), while a reader that
// waits longer (a slow disk) sleeps after it.
constexpr auto kPollFor = std::chrono::microseconds(30);

// The window next() judges the thread over: chunks from the third on (the
// thread's start is not the pipeline's pace), sixteen of them (4 MiB of an
// InputStream's file).
constexpr size_t kJudgeFrom = 2, kJudgeChunks = 16;

bool in_window(size_t chunk) {
  return chunk >= kJudgeFrom && chunk < kJudgeFrom + kJudgeChunks;
}

/**
 * The calling thread's time waiting to run on a CPU so far (the second
 * field of /proc/thread-self/schedstat), in ns; 0 where the kernel has none.
 */
int64_t run_queue_ns() {
  FILE* f = std::fopen("/proc/thread-self/schedstat", "r");
  if (!f) return 0;
  unsigned long long on_cpu = 0, waiting = 0;
  const bool read = std::fscanf(f, "%llu %llu", &on_cpu, &waiting) == 2;
  std::fclose(f);
  return read ? static_cast<int64_t>(waiting) : 0;
}

int64_t thread_cpu_ns() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return int64_t{t.tv_sec} * 1000000000 + t.tv_nsec;
}

int64_t wall_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}
}  // namespace

bool ReadAhead::overlap_pays(int64_t wall_ns, int64_t read_ns,
                             int64_t work_ns) {
  // A pipeline of two threads that takes a fifth longer than the two steps
  // one after the other has lost the overlap: both threads shared one CPU
  // (2 vCPUs, pinned together: 18.9 ms a 128 MiB pass against 12.5 inline).
  // Below that, handing chunks over costs a slow disk's reader a few %.
  return wall_ns * 5 <= (read_ns + work_ns) * 6;
}

ReadAhead::ReadAhead(ReadFn read, size_t chunk_bytes, size_t chunks)
    : read_(std::move(read)), ring_(chunks), wake_after_(chunks / 2) {
  if (chunk_bytes == 0 || chunks == 0)
    throw std::invalid_argument("ReadAhead: chunks of 0 bytes or no chunks");
  for (Chunk& c : ring_) c.buffer = AlignedBuffer(chunk_bytes);
  thread_ = std::thread([this] { run(); });
}

ReadAhead::~ReadAhead() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  freed_cv_.notify_one();
  if (thread_.joinable()) thread_.join();
}

void ReadAhead::read_inline() {
  {
    std::lock_guard lock(mutex_);
    if (stopped_) return;
    stop_ = true;
  }
  freed_cv_.notify_one();
  thread_.join();
  std::lock_guard lock(mutex_);
  stopped_ = true;
  // As after the end: the chunks read so far, then reads on this thread.
  ended_ = true;
}

bool ReadAhead::reads_ahead() const {
  return !ended_;
}

void ReadAhead::judge() {
  if (stopped_ || returned_ < kJudgeFrom ||
      returned_ > kJudgeFrom + kJudgeChunks)
    return;
  if (returned_ == kJudgeFrom) {
    window_start_ns_ = wall_ns();
    return;
  }
  work_cpu_ns_ += thread_cpu_ns() - returned_cpu_ns_;  // on chunk returned_-1
  if (returned_ < kJudgeFrom + kJudgeChunks || ended_) return;
  const int64_t wall = wall_ns() - window_start_ns_;
  int64_t read_cost;
  {
    std::lock_guard lock(mutex_);
    read_cost = read_cost_ns_;
  }
  if (!overlap_pays(wall, read_cost, work_cpu_ns_)) read_inline();
}

size_t ReadAhead::free_chunks() const {
  return ring_.size() - (filled_ - (returned_ - holding_));
}

void ReadAhead::run() {
  int64_t queued_at_window = 0;  // run_queue_ns() as the window's reads begin
  for (size_t i = 0;; ++i) {
    Chunk& chunk = ring_[i % ring_.size()];
    {
      std::unique_lock lock(mutex_);
      if (!stop_ && free_chunks() == 0) {
        thread_waits_ = true;
        freed_cv_.wait(lock, [&] { return stop_ || !thread_waits_; });
      }
      if (stop_) return;
    }
    size_t got = 0;
    std::exception_ptr error;
    // What the window's reads would cost the caller: their time, less the
    // time this thread waited for a CPU meanwhile (a slow disk's wait
    // counts, a busy CPU's not; the kernel's count is read twice a window,
    // each read costs a file's open).
    const bool timed = in_window(i);
    if (i == kJudgeFrom) queued_at_window = run_queue_ns();
    const int64_t wall_before = timed ? wall_ns() : 0;
    try {
      got = read_(chunk.buffer.data(), chunk.buffer.size());
    } catch (...) {
      error = std::current_exception();
    }
    int64_t read_cost = timed ? wall_ns() - wall_before : 0;
    if (i + 1 == kJudgeFrom + kJudgeChunks)
      read_cost -= run_queue_ns() - queued_at_window;
    bool ended, wake;
    {
      std::lock_guard lock(mutex_);
      read_cost_ns_ += read_cost;
      chunk.size = got;
      if (error)
        error_ = error;
      else
        ++filled_;
      ended = error || got < chunk.buffer.size();
      ended_ = ended;
      wake = caller_waits_ && (ended || filled_ - returned_ >= wake_after_);
      if (wake) caller_waits_ = false;
    }
    if (wake) filled_cv_.notify_one();
    if (ended) return;
  }
}

void ReadAhead::poll_for_chunk() const {
  const auto until = std::chrono::steady_clock::now() + kPollFor;
  while (filled_.load(std::memory_order_acquire) == returned_ &&
         !ended_.load(std::memory_order_acquire) &&
         std::chrono::steady_clock::now() < until)
    for (int i = 0; i < 8; ++i) cpu_relax();
}

std::span<const unsigned char> ReadAhead::next() {
  judge();
  std::unique_lock lock(mutex_);
  if (holding_) {
    holding_ = false;
    if (thread_waits_ && free_chunks() >= wake_after_) {
      thread_waits_ = false;
      freed_cv_.notify_one();
    }
  }
  if (returned_ == filled_ && !ended_) {
    lock.unlock();
    poll_for_chunk();
    lock.lock();
  }
  if (returned_ == filled_ && !ended_) {
    caller_waits_ = true;
    filled_cv_.wait(lock, [&] { return !caller_waits_; });
  }
  if (returned_ == filled_) {
    if (error_) std::rethrow_exception(error_);
    return read_past_end();
  }
  const Chunk& chunk = ring_[returned_++ % ring_.size()];
  holding_ = true;
  if (in_window(returned_ - 1)) returned_cpu_ns_ = thread_cpu_ns();
  return {chunk.buffer.data(), chunk.size};
}

std::span<const unsigned char> ReadAhead::read_past_end() {
  // The thread has ended; every chunk is free. A file still being written
  // may have grown since: read again here, as a reader without a thread of
  // its own would.
  Chunk& chunk = ring_[returned_ % ring_.size()];
  chunk.size = read_(chunk.buffer.data(), chunk.buffer.size());
  if (chunk.size == 0) return {};
  ++filled_;
  ++returned_;
  holding_ = true;
  return {chunk.buffer.data(), chunk.size};
}

}  // namespace tapeflow::io::detail
