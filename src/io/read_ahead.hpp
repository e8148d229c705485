#pragma once
// Reading a file on a thread of its own, a few buffers ahead of its reader.
// The kernel's copy out of the page cache costs about as much as a record
// reader's own work (framing, CRC32C, the copy into each record): on a core
// of its own it overlaps that work instead of preceding it.
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <exception>
#include <functional>
#include <mutex>
#include <span>
#include <thread>
#include <vector>

#include "aligned_buffer.hpp"

namespace tapeflow::io::detail {

class ReadAhead {
 public:
  /**
   * Starts reading: `read(dst, n)` fills dst with up to n bytes (fewer only
   * at the end of the file) or throws; it runs on the read-ahead thread, one
   * call per chunk (and on the caller's after the end). Throws
   * std::system_error when no thread can start.
   */
  using ReadFn = std::function<size_t(unsigned char* dst, size_t n)>;
  ReadAhead(ReadFn read, size_t chunk_bytes, size_t chunks);
  /** Stops the thread after the read in progress, if any. */
  ~ReadAhead();
  ReadAhead(const ReadAhead&) = delete;
  ReadAhead& operator=(const ReadAhead&) = delete;

  /**
   * The file's next bytes, valid until the next call (which hands their
   * buffer back to the thread); empty at the end. After the end each call
   * reads again, on the caller's thread (the file may have grown). A read's
   * error is thrown here once every chunk read before it has been returned,
   * and again by every later call.
   */
  std::span<const unsigned char> next();

 private:
  struct Chunk {
    AlignedBuffer buffer;
    size_t size = 0;
  };
  void run();
  size_t free_chunks() const;   // under mutex_
  void poll_for_chunk() const;  // the caller's brief wait before it sleeps
  std::span<const unsigned char> read_past_end();  // under mutex_

  ReadFn read_;
  std::vector<Chunk> ring_;
  // A waiting side is woken once this many chunks wait for it (or at the
  // end), not at each one: each wake-up is a context switch on both sides.
  const size_t wake_after_;
  std::mutex mutex_;
  std::condition_variable filled_cv_, freed_cv_;
  size_t returned_ = 0;   // chunks next() has returned
  bool holding_ = false;  // the caller still holds chunk returned_ - 1
  // Written under mutex_, and read without it by poll_for_chunk.
  std::atomic<size_t> filled_{0};  // chunks read so far
  std::atomic<bool> ended_{false};
  bool stop_ = false;
  bool thread_waits_ = false;  // run() waits for a free chunk
  bool caller_waits_ = false;  // next() waits for a filled one
  std::exception_ptr error_;
  std::thread thread_;  // last: starts once the members above exist
};

}  // namespace tapeflow::io::detail
