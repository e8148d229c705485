#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "autograd/node.hpp"

namespace tapeflow::autograd {

/** A recorded op on one tape: the node and the tape slots it reads/writes. */
struct TapeEntry {
  std::shared_ptr<Node> node;
  SmallVector<int32_t, 2> input_slots;   // -1: input not tracked by this tape
  SmallVector<int32_t, 3> output_slots;  // batch norm has 3 outputs
};

/**
 * A tape is a list in execution order, so backward is one reverse loop. Every
 * tracked tensor owns a slot; gradients live in a vector indexed by slot.
 */
class TapeState {
 public:
  explicit TapeState(bool persistent);
  ~TapeState();

  uint64_t serial;
  bool persistent;
  bool used = false;
  bool paused = false;
  int32_t next_slot = 0;
  std::vector<TapeEntry> entries;

  /** Slot of `t` on this tape, creating one for a trainable Variable. */
  int32_t slot_of(const Tensor& t);
  int32_t watch(const Tensor& t);
};

/** Re-derives g_recording_tapes after a tape or guard changed state. */
void refresh_recording();

}  // namespace tapeflow::autograd
