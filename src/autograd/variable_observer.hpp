#pragma once
// A hook on this thread's Variable creations, for scopes that place
// variables (tpf::dist::PsScope: TF's `with tf.device('/job:ps/task:0')`).
// Unset, it costs one thread-local test per Variable.
#include <functional>

#include "tapeflow/autograd.hpp"

namespace tapeflow::autograd {

using VariableObserver = std::function<void(const Variable&)>;
/** The observer of this thread (null: none); a scope saves and restores it. */
VariableObserver*& variable_observer();

}  // namespace tapeflow::autograd
