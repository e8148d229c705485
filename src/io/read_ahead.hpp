#pragma once
// Reading a file on a thread of its own, a few buffers ahead of its reader.
// The kernel's copy out of the page cache costs about as much as a record
// reader's own work (framing, CRC32C, the copy into each record): on a core
// of its own it overlaps that work instead of preceding it.
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
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
   * std::system_error when no thread can start. Not `judged`, it reads
   * ahead to the end whatever the pace (see read_inline).
   */
  using ReadFn = std::function<size_t(unsigned char* dst, size_t n)>;
  ReadAhead(ReadFn read, size_t chunk_bytes, size_t chunks, bool judged = true);
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

  /**
   * Stops the thread after its read in progress; next() hands out the
   * chunks read so far, then reads on the caller's thread. next() does this
   * itself where the thread does not pay: over a window of chunks early on,
   * when overlap_pays() says no. On a 2-vCPU VM the pair sometimes ran
   * 1.5-3x slower than one thread alone, as it does sharing one vCPU.
   */
  void read_inline();
  /** False once the thread has stopped (read_inline, the end, an error). */
  bool reads_ahead() const;
  /**
   * Whether a window that took `wall_ns` overlapped its reads (`read_ns`:
   * their time, less the read-ahead thread's waits for a CPU) with the
   * caller's time between chunks less its own waits for a CPU, `work_ns`)
   * enough to beat the two one after the other.
   */
  static bool overlap_pays(int64_t wall_ns, int64_t read_ns, int64_t work_ns);

 private:
  struct Chunk {
    AlignedBuffer buffer;
    size_t size = 0;
  };
  void run();
  void judge();  // next()'s bookkeeping of the window; may read_inline()
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
  bool stopped_ = false;       // read_inline() joined the thread
  std::exception_ptr error_;
  // The window next() judges (read_ahead.cpp): its reads' cost (under
  // mutex_); the caller's time between chunks, the window's start, when the
  // last chunk went out, and the caller's waits for a CPU at the start.
  const bool judged_;
  int64_t read_cost_ns_ = 0;
  int64_t work_ns_ = 0, window_start_ns_ = 0, returned_at_ns_ = 0,
          caller_queued_ns_ = 0;
  std::thread thread_;  // last: starts once the members above exist
};

}  // namespace tapeflow::io::detail
