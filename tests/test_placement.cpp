// Device placement through the backend interface, exercised with a test
// backend that keeps "cuda" memory on the host and has a kernel for add only:
// kernels run where they exist, soft placement runs the rest on the CPU (or
// refuses, when off), copies are differentiable, mixed devices are refused.
#include <unistd.h>

#include <filesystem>

#include "support/check.hpp"
#include "support/device.hpp"

namespace {

const bool kTestDevice = testing::install_host_device();

}  // namespace

TEST_CASE("kernels run on their device; soft placement covers the rest" *
          doctest::skip(!kTestDevice)) {
  const auto dev = tpf::Device::cuda(0);
  const auto a = tpf::tensor({1.0, 2.0}).to(dev);
  CHECK(a.device() == dev);
  tpf::Tensor sum, e;
  const std::string log = testing::placement_log([&] {
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

TEST_CASE("models build on their input's device, move with to(), train there" *
          doctest::skip(!kTestDevice)) {
  const auto dev = tpf::Device::cuda(0);
  const auto x = tpf::tensor({{1.0f, 2.0f, 3.0f}, {-1.0f, 0.5f, 2.0f}});
  tpf::nn::Dense on_dev(2), on_cpu(2);
  tpf::manual_seed(3);
  const auto y_dev = on_dev(x.to(dev));
  tpf::manual_seed(3);
  const auto y_cpu = on_cpu(x);
  CHECK(on_dev.kernel().device() == dev);
  CHECK(on_dev.bias().device() == dev);
  CHECK(y_dev.device() == dev);
  CHECK_CLOSE(y_dev.cpu(), y_cpu);

  // to() moves the same Variables in place: handles taken before see it.
  const tpf::Variable kernel = on_dev.kernel();
  on_dev.to(tpf::Device::cpu());
  CHECK(kernel.device() == tpf::Device::cpu());
  CHECK_CLOSE(kernel, on_cpu.kernel());
  on_dev.to(dev);
  CHECK(kernel.device() == dev);

  // Optimizer slots are made on their variable's device; steps match.
  auto train = [](tpf::nn::Dense& layer, tpf::optim::Optimizer& opt,
                  const tpf::Tensor& input) {
    for (int step = 0; step < 3; ++step) {
      tpf::GradientTape tape;
      const auto loss = tpf::sum(tpf::square(layer(input)));
      const auto params = layer.parameters();
      opt.apply_gradients(
          tape.gradient(loss,
                        std::vector<tpf::Tensor>(params.begin(), params.end())),
          params);
    }
  };
  tpf::optim::Adam adam_dev, adam_cpu;
  train(on_dev, adam_dev, x.to(dev));
  train(on_cpu, adam_cpu, x);
  CHECK(on_dev.kernel().device() == dev);
  CHECK_CLOSE(on_dev.kernel().cpu(), on_cpu.kernel());
  CHECK_CLOSE(on_dev.bias().cpu(), on_cpu.bias());

  // A checkpoint of device weights restores into device weights.
  const auto dir = std::filesystem::temp_directory_path() /
                   ("tpf_placement_ckpt_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string path =
      tpf::train::Checkpoint(on_dev.named_variables()).save(dir.string());
  tpf::nn::Dense restored(2);
  (void)restored(x.to(dev));
  tpf::train::Checkpoint(restored.named_variables()).restore(path);
  CHECK(restored.kernel().device() == dev);
  CHECK_CLOSE(restored.kernel().cpu(), on_cpu.kernel());
  std::filesystem::remove_all(dir);
}

TEST_CASE("random numbers and dropout masks are drawn on the device asked" *
          doctest::skip(!kTestDevice)) {
  const auto dev = tpf::Device::cuda(0);
  for (tpf::DType dt : {tpf::float32, tpf::float64}) {
    CAPTURE(dt);
    tpf::manual_seed(5);
    const auto u = tpf::random_uniform({1000}, -1.0, 3.0, dt, dev);
    const auto n = tpf::random_normal({1000}, 2.0, 0.5, dt, dev);
    tpf::manual_seed(5);
    const auto u_cpu = tpf::random_uniform({1000}, -1.0, 3.0, dt);
    const auto n_cpu = tpf::random_normal({1000}, 2.0, 0.5, dt);
    CHECK(u.device() == dev);
    CHECK(n.device() == dev);
    CHECK(u.cpu().to_vector<double>() == u_cpu.to_vector<double>());
    CHECK(n.cpu().to_vector<double>() == n_cpu.to_vector<double>());
    const auto s = tpf::stateless_random_normal({7}, 11, 0.0, 1.0, dt, dev);
    CHECK(s.cpu().to_vector<double>() ==
          tpf::stateless_random_normal({7}, 11, 0.0, 1.0, dt)
              .to_vector<double>());
  }
  const auto x = tpf::ones({4, 8});
  const auto kept = tpf::nn::dropout(x.to(dev), 0.5, true, {}, 7);
  CHECK(kept.device() == dev);
  CHECK(kept.cpu().to_vector<float>() ==
        tpf::nn::dropout(x, 0.5, true, {}, 7).to_vector<float>());
}

TEST_CASE("DeviceScope places creations, variables and layers; scopes nest" *
          doctest::skip(!kTestDevice)) {
  const auto dev = tpf::Device::cuda(0);
  CHECK(tpf::default_device() == tpf::Device::cpu());
  {
    tpf::DeviceScope scope(dev);
    CHECK(tpf::zeros({2}).device() == dev);
    CHECK(tpf::tensor({1.0f, 2.0f}).device() == dev);
    CHECK(tpf::random_uniform({3}).device() == dev);
    CHECK(tpf::eye(2).device() == dev);
    CHECK(tpf::arange<int64_t>(0, 3).device() == dev);
    CHECK(tpf::arange<double>(0, 1, 0.5).device() == dev);
    CHECK(tpf::Variable(tpf::ones({2}, tpf::float32, tpf::Device::cpu()))
              .device() == dev);
    CHECK(tpf::ones({2}, tpf::float32, tpf::Device::cpu()).device() ==
          tpf::Device::cpu());  // an explicit device wins
    {
      tpf::DeviceScope inner(tpf::Device::cpu());
      CHECK(tpf::zeros({2}).device() == tpf::Device::cpu());
    }
    CHECK(tpf::zeros({2}).device() == dev);
  }
  CHECK(tpf::zeros({2}).device() == tpf::Device::cpu());

  // The seeds' model parallelism: layer 0 on the CPU, layer 1 on the
  // device, the sequence moved between them; gradients cross back.
  tpf::manual_seed(5);
  tpf::nn::LSTM first(4, {.return_sequences = true}), second(3);
  const auto x = tpf::random_uniform({2, 5, 3});
  tpf::GradientTape tape;
  tape.watch(x);
  const auto h = first(x);
  tpf::Tensor y;
  {
    tpf::DeviceScope scope(dev);
    y = second(h.to(dev));
  }
  CHECK(first.cell().kernel().device() == tpf::Device::cpu());
  CHECK(second.cell().kernel().device() == dev);
  CHECK(y.device() == dev);
  const auto grads = tape.gradient(
      tpf::sum(y), {x, first.cell().kernel(), second.cell().kernel()});
  CHECK(grads[0].device() == tpf::Device::cpu());
  CHECK(grads[2].device() == dev);
  // The same numbers as the whole stack on the CPU.
  tpf::nn::LSTM first_cpu(4, {.return_sequences = true}), second_cpu(3);
  (void)second_cpu(first_cpu(x));
  for (size_t i = 0; i < 3; ++i) {
    first_cpu.parameters()[i].assign(first.parameters()[i]);
    second_cpu.parameters()[i].assign(second.parameters()[i].cpu());
  }
  CHECK_CLOSE(y.cpu(), second_cpu(first_cpu(x)));
}
