#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "tapeflow/core/dtype.hpp"
#include "tapeflow/core/shape.hpp"
#include "tapeflow/core/storage.hpp"

namespace tapeflow {

/**
 * Which gradient tapes track a tensor, and at which slot. Tape serials are
 * never reused, so a mark left by a finished tape is inert. Two marks live
 * inline as packed atomic words (one tape, or a nested pair) and are read
 * without locking; deeper nesting spills to a locked list.
 */
class TapeMarks {
 public:
  /** Slot of `tape` for this tensor, or -1. */
  int32_t find(uint64_t tape) const;
  /** Records (tape, slot), dropping marks of tapes no longer alive. */
  void add(uint64_t tape, int32_t slot);
  /** Adds every mark of `other` (an alias must be tracked as the original). */
  void add_all(const TapeMarks& other);

 private:
  struct Mark {
    uint64_t tape = 0;
    int32_t slot = -1;
  };
  std::atomic<uint64_t> inline_[2] = {0, 0};  // (tape << kSlotBits) | slot
  std::atomic<bool> spilled_ = false;
  mutable std::atomic_flag spill_busy_ = ATOMIC_FLAG_INIT;
  std::vector<Mark> spill_;
};

/** The shared state behind a Tensor handle. */
struct TensorImpl {
  // User-provided, so that make_shared's value-initialization runs only the
  // member initializers below: with an implicit constructor it first zeroes
  // all ~200 bytes (a `rep stos`, 10% of a small op's cost on Zen 3).
  TensorImpl() noexcept {}

  std::shared_ptr<Storage> storage;
  Shape shape;
  Shape strides;  // in elements; 0 along broadcast dimensions
  int64_t offset = 0;
  DType dtype = DType::float32;
  bool trainable = false;
  bool contiguous = true;  // row-major dense; set once when the impl is made
  // A Variable owns its whole buffer and may move to a fresh one when written
  // in place while others hold the old one (copy on write).
  bool variable = false;
  // storage->device(), kept here so that asking a Variable's device never
  // touches a buffer another thread's update may be freeing.
  std::atomic<Device> device;
  TapeMarks marks;

  /** Sets the buffer of a new impl (and its device). */
  void set_storage(std::shared_ptr<Storage> buffer) {
    device.store(buffer->device(), std::memory_order_relaxed);
    storage = std::move(buffer);
  }

  /**
   * Moves a Variable to `fresh`. Threads that train one model together (each
   * with its own tape, Hogwild style) do so while others read it: callers
   * hold the Variable's lock, under which every copy of its handle is made
   * (src/core/variable_lock.hpp); other tensors never change buffer.
   */
  void replace_storage(std::shared_ptr<Storage> fresh) {
    set_storage(std::move(fresh));
  }
};

}  // namespace tapeflow
