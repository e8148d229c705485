// Dataset::prefetch_to_device on the device the tests run on (the
// host-backed test device, or a real GPU: support/device.hpp): elements come
// out on the device, in order and with their values; the copies run ahead of
// the consumer within the buffer; errors come out where they happened.
#include <atomic>
#include <chrono>
#include <thread>

#include "support/check.hpp"
#include "support/device.hpp"

namespace data = tapeflow::data;
using namespace std::chrono_literals;
using testing::expect_error;

namespace {

tpf::Device device() {
  const testing::TestDevices& d = testing::test_devices();
  REQUIRE_MESSAGE(d.error.empty(), d.error);
  return d.devices.at(0);
}

/** Scalars 0, 1, ..., n - 1 as float32 tensors of `width`, counting pulls. */
data::Dataset<tpf::Tensor> rows(int64_t n, int64_t width,
                                std::shared_ptr<std::atomic<int64_t>> pulled) {
  return data::from_generator([n, width, pulled] {
    return [n, width, pulled,
            i = int64_t{0}]() mutable -> std::optional<tpf::Tensor> {
      if (i == n) return std::nullopt;
      pulled->fetch_add(1);
      return tpf::full({width}, static_cast<double>(i++), tpf::float32);
    };
  });
}

}  // namespace

TEST_CASE("elements arrive on the device, in order, with their values") {
  const tpf::Device dev = device();
  const auto x = tpf::reshape(tpf::arange(0.0f, 30.0f), {10, 3});
  const auto y = tpf::arange(int64_t{0}, int64_t{10});
  const auto ds = data::from_tensor_slices(std::make_tuple(x, y))
                      .batch(4)
                      .prefetch_to_device(dev, 2);
  CHECK(ds.cardinality() == 3);
  int64_t begin = 0;
  for (const auto& [bx, by] : ds) {
    const int64_t size = std::min<int64_t>(4, 10 - begin);
    CHECK(bx.device() == dev);
    CHECK(by.device() == dev);
    CHECK(by.dtype() == tpf::int64);
    CHECK_CLOSE(bx.cpu(), tpf::slice(x, {begin, 0}, {size, 3}));
    CHECK(by.cpu().to_vector<int64_t>() ==
          tpf::slice(y, {begin}, {size}).to_vector<int64_t>());
    begin += size;
  }
  CHECK(begin == 10);
}

TEST_CASE("the copies run ahead of the consumer, within the buffer") {
  const tpf::Device dev = device();
  constexpr int64_t kWidth = 4096;  // 16 KiB per element
  constexpr size_t kBytes = kWidth * sizeof(float);
  auto pulled = std::make_shared<std::atomic<int64_t>>(0);
  const size_t before = tpf::memory_stats(dev).allocated_bytes;
  auto it = rows(50, kWidth, pulled).prefetch_to_device(dev, 3).make_iterator();
  // Nothing taken yet: three copies buffered, at most one more in the
  // pipeline thread's hands.
  for (int i = 0; i < 2000 && pulled->load() < 4; ++i)
    std::this_thread::sleep_for(1ms);
  std::this_thread::sleep_for(20ms);
  CHECK(pulled->load() >= 3);
  CHECK(pulled->load() <= 4);
  // They were copied before the consumer asked: device memory holds them.
  CHECK(tpf::memory_stats(dev).allocated_bytes >= before + 3 * kBytes);
  for (int64_t i = 0; i < 50; ++i) {
    const auto t = it.get_next();
    REQUIRE(t.has_value());
    CHECK(t->device() == dev);
    CHECK(t->cpu().to_vector<float>().back() == static_cast<float>(i));
  }
  CHECK_FALSE(it.get_next().has_value());
  CHECK(pulled->load() == 50);
}

TEST_CASE("errors come out of get_next at their place") {
  const tpf::Device dev = device();
  const auto failing = data::from_generator([] {
    return [i = 0]() mutable -> std::optional<tpf::Tensor> {
      if (i == 3) return std::nullopt;
      if (i++ == 1) throw tpf::IOError("[reader] expected a record, got none");
      return tpf::scalar(static_cast<float>(i));
    };
  });
  auto it = failing.prefetch_to_device(dev, 2).make_iterator();
  CHECK(it.get_next()->device() == dev);
  expect_error<tpf::IOError>([&] { it.get_next(); }, "[reader] expected");
  CHECK(it.get_next()->cpu().item<float>() == 3.0f);  // it goes on
  CHECK_FALSE(it.get_next().has_value());

  // A device this process does not have: the copy's error, at element 0.
  auto missing =
      rows(2, 1, std::make_shared<std::atomic<int64_t>>(0))
          .prefetch_to_device(
              tpf::Device::cuda(tpf::device_count(tpf::DeviceType::cuda)), 1)
          .make_iterator();
  expect_error<tpf::DeviceError>([&] { missing.get_next(); }, "[to] expected");

  expect_error<tpf::ValueError>(
      [&] { failing.prefetch_to_device(dev, 0); },
      "[prefetch_to_device] expected buffer_size >= 1 or kAutotune, got 0");
}

TEST_CASE("strings stay on the host, vectors of tensors move") {
  const tpf::Device dev = device();
  const auto text = tpf::from_strings({"a", "b"}, {2});
  const auto labels = tpf::tensor({1.0f, 0.0f});
  for (const auto& [t, l] :
       data::from_tensor_slices(std::make_tuple(text, labels))
           .batch(2)
           .prefetch_to_device(dev)) {
    CHECK(t.device() == tpf::Device::cpu());
    CHECK(t.to_strings() == std::vector<std::string>{"a", "b"});
    CHECK(l.device() == dev);
  }
  const auto vectors = data::range(3).map([](const tpf::Tensor& i) {
    return std::vector<tpf::Tensor>{i, i + i};
  });
  int64_t i = 0;
  for (const auto& v : vectors.prefetch_to_device(dev, 2)) {
    REQUIRE(v.size() == 2);
    CHECK(v[0].device() == dev);
    CHECK(v[1].cpu().item<int64_t>() == 2 * i++);
  }
  CHECK(i == 3);
}
