// Device placement through the backend interface, exercised with a test
// backend that keeps "cuda" memory on the host and has a kernel for add only:
// kernels run where they exist, soft placement runs the rest on the CPU (or
// refuses, when off), copies are differentiable, mixed devices are refused.
#include <iostream>
#include <sstream>

#include "support/check.hpp"
#include "support/device.hpp"

namespace {

std::string capture_placement(const std::function<void()>& fn) {
  std::ostringstream captured;
  auto* old = std::cerr.rdbuf(captured.rdbuf());
  tpf::config::log_device_placement(true);
  fn();
  tpf::config::log_device_placement(false);
  std::cerr.rdbuf(old);
  return captured.str();
}

const bool kTestDevice = testing::install_host_device();

}  // namespace

TEST_CASE("kernels run on their device; soft placement covers the rest" *
          doctest::skip(!kTestDevice)) {
  const auto dev = tpf::Device::cuda(0);
  const auto a = tpf::tensor({1.0, 2.0}).to(dev);
  CHECK(a.device() == dev);
  tpf::Tensor sum, e;
  const std::string log = capture_placement([&] {
    sum = a + a;
    e = tpf::exp(a);
  });
  CHECK(log.find("add -> cuda:0 (test)") != std::string::npos);
  CHECK(log.find("exp -> cpu:0 (xsimd, soft placement)") != std::string::npos);
  CHECK(sum.device() == dev);
  CHECK(e.device() == dev);
  CHECK_CLOSE(sum.cpu(), tpf::tensor({2.0, 4.0}));
  CHECK_CLOSE(e.cpu(), tpf::exp(tpf::tensor({1.0, 2.0})));

  tpf::config::set_soft_placement(false);
  CHECK_THROWS_AS(tpf::exp(a), tpf::DeviceError);
  tpf::config::set_soft_placement(true);
}

TEST_CASE("mixed devices and bad indices are DeviceErrors" *
          doctest::skip(!kTestDevice)) {
  const auto a = tpf::ones({2}).to(tpf::Device::cuda(0));
  CHECK_THROWS_AS(a + tpf::ones({2}), tpf::DeviceError);
  try {
    (void)(a + tpf::ones({2}));
  } catch (const tpf::DeviceError& e) {
    const std::string msg = e.what();
    CHECK(msg.rfind("[add]", 0) == 0);
    CHECK(msg.find("cuda:0") != std::string::npos);
    CHECK(msg.find("cpu:0") != std::string::npos);
  }
  CHECK_THROWS_AS(tpf::ones({2}).to(tpf::Device::cuda(3)), tpf::DeviceError);
}

TEST_CASE("gradients flow back across device copies" *
          doctest::skip(!kTestDevice)) {
  const auto x = tpf::tensor({1.0, -2.0, 3.0});
  tpf::GradientTape tape;
  tape.watch(x);
  const auto on_device = x.to(tpf::Device::cuda(0));
  const auto y = tpf::sum((on_device + on_device) * on_device);  // 2 x^2
  const auto g = tape.gradient(y, {x})[0];
  CHECK(g.device() == tpf::Device::cpu());
  CHECK_CLOSE(g, tpf::tensor({4.0, -8.0, 12.0}));
}
