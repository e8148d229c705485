#pragma once
// The non-CPU devices tests run on: a host-backed test device that any
// machine has, or a real GPU; and the placement log of a piece of code.
// Nothing here needs the private headers.
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "tapeflow/tapeflow.hpp"

namespace tpf = tapeflow;

namespace testing {

/**
 * Installs, once, a test backend for DeviceType::cuda that keeps its memory
 * in host memory. Its only kernel is the CPU's add (logged as backend "test");
 * every other op soft-places onto the CPU. Returns false, installing nothing,
 * when a real GPU owns DeviceType::cuda.
 */
bool install_host_device();

/**
 * The devices run_op_case compares with the CPU, resolved once per process
 * from TAPEFLOW_TEST_DEVICE:
 *  - unset or empty: cuda:0 of the host-backed test device (installed here),
 *    or of the real GPU where one owns DeviceType::cuda;
 *  - "cuda": cuda:0 of a real GPU; without one, `error` says why and the
 *    device pass fails (the test device is never put in its place).
 * TAPEFLOW_TEST_STRICT_DEVICE=1 turns soft placement off: a case whose op
 * has no kernel on the device fails, naming the op.
 */
struct TestDevices {
  std::vector<tpf::Device> devices;
  std::string backend;  // "test" or "cuda"
  std::string error;    // non-empty: the device asked for is missing
};
const TestDevices& test_devices();
/** The CPU, then test_devices()'s devices: where a test checks every one. */
std::vector<tpf::Device> all_devices();

/**
 * What `f` writes to std::cerr while placement logging is on. The log names
 * each (op, device, backend) once per process, so a loop collects its
 * iterations' logs and checks them once.
 */
template <class F>
std::string placement_log(F&& f) {
  std::ostringstream captured;
  // Restored when f throws too: std::cerr must not keep the dead buffer (a
  // failing op crashed the rest of the binary). Where logging was on already
  // (TAPEFLOW_LOG_PLACEMENT=1: tests/cuda_host_check.sh reads the whole
  // run's log), it stays on and the captured lines go on to std::cerr too,
  // as the log names each placement once.
  struct Restore {
    std::streambuf* old;
    bool logging;
    const std::ostringstream& captured;
    ~Restore() {
      tpf::config::log_device_placement(logging);
      std::cerr.rdbuf(old);
      if (logging) std::cerr << captured.str();
    }
  } restore{std::cerr.rdbuf(captured.rdbuf()),
            tpf::config::log_device_placement(), captured};
  tpf::config::log_device_placement(true);
  f();
  return captured.str();
}

}  // namespace testing
