#include "dist/work.hpp"

#include "dist/comm_state.hpp"

namespace tapeflow::dist {
namespace detail {

bool advance(WorkState& w, bool block) {
  while (!w.done) {
    if (!w.requests.empty()) {
      int complete = 1;
      const int n = static_cast<int>(w.requests.size());
      w.statuses.resize(w.requests.size());
      const int rc =
          block
              ? MPI_Waitall(n, w.requests.data(), w.statuses.data())
              : MPI_Testall(n, w.requests.data(), &complete, w.statuses.data());
      if (rc != MPI_SUCCESS) {
        w.done = true;
        w.flight.end();
        check_mpi(rc, w.op);
      }
      if (!complete) return false;
      w.requests.clear();
    }
    if (w.phases.empty()) {
      w.done = true;
      w.flight.end();
      break;
    }
    auto phase = std::move(w.phases.front());
    w.phases.pop_front();
    try {
      w.may_block = block;
      phase(w);
      if (w.not_ready) {
        w.not_ready = false;
        return false;
      }
    } catch (...) {
      w.done = true;
      w.flight.end();
      throw;
    }
  }
  return true;
}

void settle(CommState& c) {
  if (auto w = c.in_flight.lock()) {
    c.in_flight.reset();
    advance(*w, true);
  }
}

void track(CommState& c, const std::shared_ptr<WorkState>& w) {
  if (!w->blocking) c.in_flight = w;
}

WorkState::~WorkState() {
  try {
    advance(*this, true);
  } catch (const Error&) {
    // An error nobody waited for: the collective is over either way.
  }
}

}  // namespace detail

void Work::wait() {
  if (state_) detail::advance(*state_, true);
}
bool Work::test() {
  return !state_ || detail::advance(*state_, false);
}
Tensor Work::result() {
  wait();
  return state_ ? state_->result : Tensor();
}

}  // namespace tapeflow::dist
