#pragma once
// Ctrl-C asks the training loop to stop after the current step (so that it
// can save a checkpoint and exit cleanly); a second Ctrl-C exits at once.
#include <csignal>
#include <cstdlib>

namespace samples {

inline volatile std::sig_atomic_t g_interrupted = 0;

inline void install_interrupt_handler() {
  std::signal(SIGINT, [](int) {
    if (g_interrupted) std::_Exit(130);
    g_interrupted = 1;
  });
}

inline bool interrupted() {
  return g_interrupted != 0;
}

}  // namespace samples
