#pragma once
// What a node remembers about each tensor it saves, so that its gradient
// reads the values the op saw even after an in-place write (TensorFlow's
// semantics), and never silently reads newer ones.
#include <memory>
#include <span>
#include <vector>

#include "core/small_vector.hpp"
#include "core/variable_lock.hpp"
#include "tapeflow/core/tensor.hpp"

namespace tapeflow::autograd {

/**
 * The buffer version a saved tensor had when its op ran, and for a Variable
 * the buffer itself: holding it makes an in-place write move the Variable to
 * a fresh buffer (copy on write) and leave this one to the node.
 */
struct SaveStamp {
  std::shared_ptr<Storage> pinned;
  uint64_t version = 0;
};

inline SaveStamp stamp_of(const Tensor& t) {
  if (!t.defined()) return {};
  const TensorImpl& impl = *t.impl();
  if (!impl.variable) return {nullptr, impl.storage->version()};
  // Writers replace the handle under this lock: a plain copy is safe here.
  const std::lock_guard lock(variable_lock(impl));
  return {impl.storage, impl.storage->version()};
}

/** Tensors a node saves for its gradient, each with its stamp. */
template <size_t N>
struct SavedTensors {
  SmallVector<Tensor, N> tensors;
  SmallVector<SaveStamp, N> stamps;

  void push_back(const Tensor& t) {
    stamps.push_back(stamp_of(t));
    tensors.push_back(t);
  }
};

/**
 * `saved` as the op saw it: the handles themselves, or, where a Variable has
 * moved to a fresh buffer since, aliases of the pinned buffer built in
 * `scratch`. A tensor written in place that could not move is a ValueError
 * naming `op`.
 */
std::span<const Tensor> as_recorded(const char* op, const char* what,
                                    std::span<const Tensor> saved,
                                    std::span<const SaveStamp> stamps,
                                    std::vector<Tensor>& scratch);

}  // namespace tapeflow::autograd
