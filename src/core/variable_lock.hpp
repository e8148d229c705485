#pragma once
// The lock that makes "does anyone else hold this Variable's buffer?" and
// the version bump of an in-place write one step with a tape saving the
// Variable. Without it a tape could pin the buffer between a writer's check
// and its bump (threads training one model, each with its own tape), and
// its gradient then found the values it saved overwritten.
#include <array>
#include <cstdint>
#include <memory>
#include <mutex>

#include "tapeflow/core/tensor_impl.hpp"

namespace tapeflow {

/**
 * One of 64 mutexes, chosen by the Variable's address: a mutex per
 * TensorImpl would grow every tensor by 40 bytes for what only Variables
 * written from several threads need.
 */
inline std::mutex& variable_lock(const TensorImpl& variable) {
  static std::array<std::mutex, 64> locks;
  const auto address = reinterpret_cast<uintptr_t>(&variable);
  return locks[(address >> 6) % locks.size()];
}

/**
 * The buffer `t` has now, shared. A Variable's is read under its lock, the
 * one its in-place writers hold from their "does anyone else hold it?" check
 * to their version bump: a reader that slipped between the two would hold
 * the buffer while the writer thinks it alone does, and a tape node saving
 * that view would then find its values overwritten.
 */
inline std::shared_ptr<Storage> storage_of(const TensorImpl& t) {
  if (!t.variable) return t.storage;
  const std::lock_guard lock(variable_lock(t));
  return t.storage;
}

}  // namespace tapeflow
