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
 * inline (one tape, or one nested pair); deeper nesting spills to the heap.
 */
class TapeMarks {
 public:
  struct Mark {
    uint64_t tape = 0;
    int32_t slot = -1;
  };
  /** Slot of `tape` for this tensor, or -1. */
  int32_t find(uint64_t tape) const;
  /** Records (tape, slot), dropping marks of tapes no longer alive. */
  void add(uint64_t tape, int32_t slot);
  bool empty() const { return !inline_[0].tape && spill_.empty(); }

 private:
  class Lock;
  mutable std::atomic_flag busy_ = ATOMIC_FLAG_INIT;
  Mark inline_[2];
  std::vector<Mark> spill_;
};

/** The shared state behind a Tensor handle. */
struct TensorImpl {
  std::shared_ptr<Storage> storage;
  Shape shape;
  Shape strides;  // in elements; 0 along broadcast dimensions
  int64_t offset = 0;
  DType dtype = DType::float32;
  bool trainable = false;
  TapeMarks marks;
};

}  // namespace tapeflow
