#pragma once
// Data errors found by device kernels, reported at the next synchronization
// (CUDA.md §3). A kernel that finds a bad index must not read out of bounds
// and cannot throw, so it records the first bad value in a word the host can
// read (mapped pinned memory on CUDA); the next sync turns the record into
// the IndexError the CPU would have thrown at once. No CUDA here, so the
// bookkeeping and the message are tested on the CPU.
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace tapeflow {

/**
 * The first bad value a kernel found on one device since the last sync.
 * Written by the one kernel thread that claimed the device's flag (a word
 * in device memory, so that losing threads do not contend over PCIe):
 * op, value, lo and hi, a system fence, then `claimed` last, so a host that
 * sees `claimed` sees the rest. Read by the host after the stream's sync.
 */
struct DeferredErrorRecord {
  unsigned int claimed;  // 0: nothing to report
  unsigned int op;       // DeferredOpNames id of the reporting op
  long long value;       // the bad value
  long long lo, hi;      // the valid range [lo, hi)
};

/**
 * The op names kernels report under, interned to small ids so that a
 * kernel carries an integer, not a string. Ids are never reused: a kernel
 * still queued when another thread interns a name keeps a valid id.
 */
class DeferredOpNames {
 public:
  unsigned int id(std::string_view op);
  std::string name(unsigned int id) const;

 private:
  mutable std::mutex mutex_;
  std::vector<std::string> names_;
};

/**
 * "[gather] expected indices in [0, 10), got 12 (on cuda:0, reported at
 * synchronization)".
 */
std::string deferred_index_message(std::string_view op, long long lo,
                                   long long hi, long long value,
                                   std::string_view device);

/**
 * After the device's work is done: if a kernel reported, copies the record
 * out, clears it, calls `rearm` (which clears the device's flag, so that
 * later kernels report afresh) and throws the IndexError it describes.
 */
void raise_deferred_error(DeferredErrorRecord& record,
                          const DeferredOpNames& names, std::string_view device,
                          const std::function<void()>& rearm);

}  // namespace tapeflow
