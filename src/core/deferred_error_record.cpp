#include "core/deferred_error_record.hpp"

#include <algorithm>

#include "core/op_error.hpp"
#include "tapeflow/core/error.hpp"

namespace tapeflow {

unsigned int DeferredOpNames::id(std::string_view op) {
  std::lock_guard lock(mutex_);
  const auto it = std::find(names_.begin(), names_.end(), op);
  if (it != names_.end()) return unsigned(it - names_.begin());
  names_.emplace_back(op);
  return unsigned(names_.size() - 1);
}

std::string DeferredOpNames::name(unsigned int id) const {
  std::lock_guard lock(mutex_);
  // An id no interning handed out means the record was overwritten by a
  // stray kernel write: say so rather than index out of bounds.
  if (id >= names_.size()) return "unknown op " + std::to_string(id);
  return names_[id];
}

std::string deferred_index_message(std::string_view op, long long lo,
                                   long long hi, long long value,
                                   std::string_view device) {
  return op_error<IndexError>(op, "expected indices in [", lo, ", ", hi,
                              "), got ", value, " (on ", device,
                              ", reported at synchronization)")
      .what();
}

void raise_deferred_error(DeferredErrorRecord& record,
                          const DeferredOpNames& names, std::string_view device,
                          const std::function<void()>& rearm) {
  // volatile: the device wrote the record behind the compiler's back.
  volatile DeferredErrorRecord& seen = record;
  if (seen.claimed == 0) return;
  const unsigned int op = seen.op;
  const long long value = seen.value, lo = seen.lo, hi = seen.hi;
  seen.claimed = 0;
  rearm();
  throw IndexError(
      deferred_index_message(names.name(op), lo, hi, value, device));
}

}  // namespace tapeflow
