#include "read_ahead.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <memory>
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
 * A thread's time waiting to run on a CPU so far, in ns, from `fd`: its
 * /proc/thread-self/schedstat (the second field); 0 where there is none.
 */
int64_t run_queue_ns(int fd) {
  char text[96];
  const ssize_t n = fd < 0 ? -1 : ::pread(fd, text, sizeof text - 1, 0);
  if (n <= 0) return 0;
  text[n] = '\0';
  char* end = nullptr;
  std::strtoull(text, &end, 10);  // time on a CPU
  return static_cast<int64_t>(std::strtoull(end, nullptr, 10));
}

/** The calling thread's schedstat, open (-1 where the kernel has none). */
class RunQueueClock {
 public:
  RunQueueClock()
      : fd_(::open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC)) {}
  ~RunQueueClock() {
    if (fd_ >= 0) ::close(fd_);
  }
  RunQueueClock(const RunQueueClock&) = delete;
  RunQueueClock& operator=(const RunQueueClock&) = delete;
  int64_t ns() const { return run_queue_ns(fd_); }

 private:
  int fd_;
};

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

ReadAhead::ReadAhead(ReadFn read, size_t chunk_bytes, size_t chunks,
                     bool judged)
    : read_(std::move(read)),
      ring_(chunks),
      wake_after_(chunks / 2),
      judged_(judged) {
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
  if (!judged_ || stopped_ || returned_ < kJudgeFrom ||
      returned_ > kJudgeFrom + kJudgeChunks)
    return;
  const int64_t now = wall_ns();
  if (returned_ == kJudgeFrom) {
    window_start_ns_ = now;
    caller_queued_ns_ = RunQueueClock().ns();
    return;
  }
  work_ns_ += now - returned_at_ns_;  // the caller's, on chunk returned_-1
  if (returned_ < kJudgeFrom + kJudgeChunks || ended_) return;
  // Its time between chunks less its waits for a CPU: what it would spend
  // between reads on its own, blocking included.
  const int64_t work = std::max<int64_t>(
      0, work_ns_ - (RunQueueClock().ns() - caller_queued_ns_));
  int64_t read_cost;
  {
    std::lock_guard lock(mutex_);
    read_cost = read_cost_ns_;
  }
  if (!overlap_pays(now - window_start_ns_, read_cost, work)) read_inline();
}

size_t ReadAhead::free_chunks() const {
  return ring_.size() - (filled_ - (returned_ - holding_));
}

void ReadAhead::run() {
  std::unique_ptr<RunQueueClock> queue;  // open over the judged window
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
    // What the window's reads would cost the caller: their time, less this
    // thread's waits for a CPU meanwhile (a slow disk's wait counts, a busy
    // CPU's not).
    const bool timed = judged_ && in_window(i);
    if (timed && !queue) queue = std::make_unique<RunQueueClock>();
    const int64_t wall_before = timed ? wall_ns() : 0,
                  queued_before = timed ? queue->ns() : 0;
    try {
      got = read_(chunk.buffer.data(), chunk.buffer.size());
    } catch (...) {
      error = std::current_exception();
    }
    const int64_t read_cost =
        timed ? std::max<int64_t>(0, (wall_ns() - wall_before) -
                                         (queue->ns() - queued_before))
              : 0;
    if (timed && i + 1 == kJudgeFrom + kJudgeChunks) queue.reset();
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
  lock.unlock();
  if (in_window(returned_ - 1)) returned_at_ns_ = wall_ns();
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
