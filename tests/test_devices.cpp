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

TEST_CASE("device names parse back to devices") {
  CHECK(tpf::parse_device("cpu") == tpf::Device::cpu());
  CHECK(tpf::parse_device("cpu:0") == tpf::Device::cpu());
  CHECK(tpf::parse_device("cuda") == tpf::Device::cuda(0));
  CHECK(tpf::parse_device("cuda:3") == tpf::Device::cuda(3));
  CHECK(tpf::parse_device("cuda:32767") == tpf::Device::cuda(32767));
  for (const auto d : {tpf::Device::cpu(), tpf::Device::cuda(12)})
    CHECK(tpf::parse_device(d.str()) == d);
  // Parsing asks no backend: a device this machine lacks still parses.
  CHECK(tpf::parse_device("cuda:7").index == 7);
}

TEST_CASE("malformed device names are ValueErrors, huge indices DeviceErrors") {
  for (const char* spec : {"", "gpu", "CUDA:0", "cuda:", "cuda:-1", "cuda:1x",
                           "cuda: 1", " cpu", "cpu:1", "cuda:0:1", "cudax"})
    expect_error<tpf::ValueError>(
        [&] { tpf::parse_device(spec); },
        std::string("[parse_device] expected \"cpu\", \"cpu:0\", \"cuda\" or "
                    "\"cuda:N\", got \"") +
            spec + "\"");
  expect_error<tpf::DeviceError>(
      [] { tpf::parse_device("cuda:32768"); },
      "[parse_device] expected a device index in [0, 32767], got 32768");
  expect_error<tpf::DeviceError>(
      [] { tpf::parse_device("cuda:99999999999999999999"); },
      "[parse_device] expected a device index in [0, 32767], got "
      "99999999999999999999");
}
