#include "read_ahead.hpp"

#include <chrono>
#include <stdexcept>

namespace tapeflow::io::detail {

namespace {
// How long next() polls for a chunk before it sleeps: about one 256 KiB
// read from the page cache. A sleep and its wake-up cost both threads a
// context switch; TFRecord reading at 2 threads went from 0.63-0.80x to
// 0.77-0.83x of a bare read() loop with it (Zen 3), while a reader that
// waits longer (a slow disk) sleeps after it.
constexpr auto kPollFor = std::chrono::microseconds(30);

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}
}  // namespace

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
  thread_.join();
}

size_t ReadAhead::free_chunks() const {
  return ring_.size() - (filled_ - (returned_ - holding_));
}

void ReadAhead::run() {
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
    try {
      got = read_(chunk.buffer.data(), chunk.buffer.size());
    } catch (...) {
      error = std::current_exception();
    }
    bool ended, wake;
    {
      std::lock_guard lock(mutex_);
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
