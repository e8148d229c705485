// Device enumeration and the visible-device list, in a process of their own
// (no test device): CUDA_VISIBLE_DEVICES is read once, at CUDA's first use.
#include <cstdlib>
#include <string>

#include "support/check.hpp"

using testing::expect_error;

TEST_CASE("the visible-device list is checked, written, then fixed") {
  expect_error<tpf::ValueError>(
      [] {
        tpf::config::set_visible_devices({0, -1});
      },
      "[set_visible_devices] expected distinct device ordinals >= 0, got -1");
  expect_error<tpf::ValueError>(
      [] {
        tpf::config::set_visible_devices({1, 2, 1});
      },
      "[set_visible_devices] expected distinct device ordinals >= 0, got 1 "
      "twice");
  tpf::config::set_visible_devices({2, 0});
  CHECK(std::string(std::getenv("CUDA_VISIBLE_DEVICES")) == "2,0");
  // None visible: with or without a GPU here, CUDA then sees no device.
  tpf::config::set_visible_devices({});
  CHECK(std::string(std::getenv("CUDA_VISIBLE_DEVICES")).empty());
  CHECK(tpf::device_count(tpf::DeviceType::cuda) == 0);
  expect_error<tpf::DeviceError>(
      [] { tpf::config::set_visible_devices({0}); },
      "[set_visible_devices] expected a call before CUDA's first use, got one "
      "after it (0 CUDA devices visible; CUDA_VISIBLE_DEVICES is read once)");
}

TEST_CASE("the CPU is one device and never waits") {
  CHECK(tpf::device_count(tpf::DeviceType::cpu) == 1);
  tpf::synchronize(tpf::Device::cpu());
  expect_error<tpf::DeviceError>([] { tpf::synchronize(tpf::Device::cuda(0)); },
                                 "[synchronize] expected");
}
