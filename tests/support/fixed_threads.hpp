#pragma once
// Kernels' thread count fixed for a scope, whatever the machine's load.
#include "tapeflow/config.hpp"

namespace testing {

/**
 * config::intra_op_threads() is `n` (load adaptation off) until the scope
 * ends, a failed REQUIRE included; then both settings are restored.
 */
class FixedThreads {
 public:
  explicit FixedThreads(int n) : adapt_(tapeflow::config::adapt_to_load()) {
    tapeflow::config::set_adapt_to_load(false);
    saved_ = tapeflow::config::intra_op_threads();  // unadapted now
    set(n);
  }
  ~FixedThreads() {
    tapeflow::config::set_intra_op_threads(saved_);
    tapeflow::config::set_adapt_to_load(adapt_);
  }
  FixedThreads(const FixedThreads&) = delete;
  FixedThreads& operator=(const FixedThreads&) = delete;
  void set(int n) { tapeflow::config::set_intra_op_threads(n); }

 private:
  bool adapt_;
  int saved_ = 1;
};

}  // namespace testing
