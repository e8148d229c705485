#pragma once
#include <atomic>
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
 *
 * A tape records the ops of the thread that made it (as in TensorFlow), which
 * lists it in a thread-local vector read without a lock on every op. Its
 * GradientTape may be destroyed on another thread: that thread cannot touch
 * the owner's list, so it only marks the state abandoned; the owner stops
 * recording into it and drops it the next time it looks (its next recorded
 * op, tape, pause or NoGradGuard, or its exit).
 */
class TapeState {
 public:
  explicit TapeState(bool persistent);
  ~TapeState();

  uint64_t serial;
  bool persistent;
  bool used = false;
  bool paused = false;
  int walks = 0;  // gradient() calls in progress (hooks may nest them)
  std::atomic<bool> abandoned = false;
  int32_t next_slot = 0;
  std::vector<TapeEntry> entries;

  /** Slot of `t` on this tape, creating one for a trainable Variable. */
  int32_t slot_of(const Tensor& t);
  int32_t watch(const Tensor& t);
};

/** Lists `tape` as recording on this thread. */
void start_recording(const std::shared_ptr<TapeState>& tape);
/** Stops `tape` recording, from its own thread or any other. */
void stop_recording(TapeState& tape);
/**
 * Re-derives g_recording_tapes after a tape or guard changed state, and drops
 * the tapes other threads abandoned.
 */
void refresh_recording();

}  // namespace tapeflow::autograd
