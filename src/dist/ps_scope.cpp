// PsScope: the ps task of variables by where they were created. The scope
// watches this thread's Variable creations (autograd's observer hook) and
// remembers each one weakly, so that a dead variable's address reused by a
// new one is never mistaken for it.
#include <mutex>
#include <vector>

#include "autograd/variable_observer.hpp"
#include "core/op_error.hpp"
#include "dist/ps_state.hpp"

namespace tapeflow::dist {
namespace {

struct Pinned {
  std::weak_ptr<TensorImpl> variable;
  int task;
};

std::mutex g_mu;
std::vector<Pinned>& pinned() {
  static auto* list = new std::vector<Pinned>;  // leaked: used at exit
  return *list;
}

}  // namespace

struct PsScope::Impl {
  autograd::VariableObserver observe;
  autograd::VariableObserver* previous;
};

PsScope::PsScope(int task) : impl_(std::make_unique<Impl>()) {
  if (task < 0)
    throw op_error<ValueError>("PsScope", "expected a ps task >= 0, got ",
                               task);
  impl_->observe = [task](const Variable& v) {
    std::lock_guard lock(g_mu);
    auto& list = pinned();
    std::erase_if(list, [](const Pinned& p) { return p.variable.expired(); });
    list.push_back({v.impl_ptr(), task});
  };
  impl_->previous = autograd::variable_observer();
  autograd::variable_observer() = &impl_->observe;
}

PsScope::~PsScope() {
  autograd::variable_observer() = impl_->previous;
}

namespace detail {

int pinned_task(const Variable& v) {
  std::lock_guard lock(g_mu);
  for (const Pinned& p : pinned())
    if (p.variable.lock().get() == v.impl()) return p.task;
  return -1;
}

}  // namespace detail
}  // namespace tapeflow::dist
