#pragma once
// What every sample's main() shares: the --threads option and running the
// program with a tpf::Error turned into its message and exit status 2.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <tapeflow/tapeflow.hpp>

namespace samples {

/** --threads N: CPU threads for the kernels (0: all cores). */
inline void add_threads_option(CLI::App& app, int& threads) {
  app.add_option("--threads", threads, "CPU threads (0: all cores)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
}

/**
 * body() on `threads` CPU threads (0 leaves the default); returns its exit
 * status, or 2 after printing a tapeflow::Error's message.
 */
template <class Body>
int run_sample(int threads, Body&& body) {
  try {
    if (threads > 0) tapeflow::config::set_intra_op_threads(threads);
    return body();
  } catch (const tapeflow::Error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 2;
  }
}

}  // namespace samples
