#pragma once
// Training checkpoints: variables, optimizer slots, step and RNG state in one
// .npz file, written atomically.
#include <cstdint>
#include <future>
#include <string>
#include <utility>
#include <vector>

#include "tapeflow/autograd.hpp"
#include "tapeflow/creation.hpp"

namespace tapeflow::train {

/** Named variables, e.g. a model's named_parameters(). */
using NamedVariables = std::vector<std::pair<std::string, Variable>>;

/**
 * Saves and restores model parameters, optimizer slot variables, a step
 * counter and the global RNG state (get_rng_state()) as one NumPy-readable
 * .npz. In the archive parameters keep their names, slots are stored as
 * "optimizer/<name>", the step as the int64 scalar "__step__" and the RNG
 * state as the int64 pair "__rng__" (seed, offset; bit-cast from uint64).
 *
 *   tpf::train::Checkpoint ckpt(model.named_parameters(), opt.slots(), 3);
 *   if (auto p = tpf::train::latest_checkpoint(dir); !p.empty())
 *     ckpt.restore(p);
 *   ...; ckpt.set_step(step); ckpt.save(dir);
 */
class Checkpoint {
 public:
  /**
   * `max_to_keep` newest checkpoints are kept by save() (<= 0 keeps all).
   * Throws ValueError for empty, duplicate or reserved ("__…") names and for
   * undefined variables.
   */
  explicit Checkpoint(NamedVariables variables, NamedVariables slots = {},
                      int max_to_keep = 5);

  int64_t step() const { return step_; }
  void set_step(int64_t step) { step_ = step; }
  int max_to_keep() const { return max_to_keep_; }
  const NamedVariables& variables() const { return variables_; }
  const NamedVariables& slots() const { return slots_; }

  /**
   * Writes "<dir>/ckpt-<step>.npz" atomically (creating `dir` if needed),
   * records it as the latest in "<dir>/checkpoint" (TensorFlow's state
   * file, in its text format: the checkpoints oldest saved first), then
   * deletes the oldest saved "ckpt-<n>.npz" files of `dir` beyond
   * max_to_keep (never the one just written; files the list does not name
   * count as older). Returns the new file's path. Each variable is read
   * as it is at one moment even while other threads update it (its
   * writes under way finish first, later ones go to a fresh buffer), and
   * saves into one directory from several threads take turns.
   */
  std::string save(const std::string& dir) const;
  /**
   * save(dir) with the writing on another thread, as TensorFlow's async
   * checkpoint and PyTorch's async_save: the values are taken here, at
   * once and without a copy (each variable's next update moves it to a
   * fresh buffer, the saved one stays as it was), then a worker writes the
   * file and the state file. get() returns the path or rethrows the save's
   * error. The future waits for the write when destroyed, so keep it while
   * training goes on; the Checkpoint itself may go.
   */
  std::future<std::string> save_async(const std::string& dir) const;

  /**
   * Loads `path` and checks that every expected array is present with the
   * variable's shape and dtype (and, unless `expect_partial`, that the file
   * holds nothing else). All mismatches are reported together in one
   * ValueError and nothing is changed; otherwise every variable is assigned
   * in place, and the step and RNG state are restored. A missing, truncated
   * or corrupt file is an IOError.
   */
  void restore(const std::string& path, bool expect_partial = false);

 private:
  NamedVariables variables_;
  NamedVariables slots_;
  int max_to_keep_;
  int64_t step_ = 0;
};

/**
 * Path of the checkpoint of `dir` saved last, as its state file lists them,
 * or "" when there is none. A step below an earlier one (training resumed
 * from an older checkpoint) is still the latest, as in TensorFlow. Files
 * named exactly "ckpt-<n>.npz" that the list does not name (or all, without
 * a state file) count as saved before the listed ones, by step; temporary
 * files are ignored.
 */
std::string latest_checkpoint(const std::string& dir);

}  // namespace tapeflow::train
