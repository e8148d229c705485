// Tensors: creation, conversion, printing, the caching allocator, devices and
// configuration.
#include <algorithm>
#include <array>
#include <cmath>
#include <sstream>

#include "support/check.hpp"
#include "support/device.hpp"

TEST_CASE("creation functions follow the literals' dtypes") {
  const auto a = tpf::tensor({1.f, 2.f, 3.f});
  CHECK(a.dtype() == tpf::float32);
  CHECK(a.shape() == tpf::Shape{3});
  const auto b = tpf::tensor({{1.0, 2.0}, {3.0, 4.0}});
  CHECK(b.dtype() == tpf::float64);
  CHECK(b.rank() == 2);
  CHECK(tpf::tensor({{{1, 2}}, {{3, 4}}}).shape() == tpf::Shape{2, 1, 2});
  CHECK(tpf::from_vector(std::vector<float>(6, 1.f), {2, 3}).numel() == 6);
  CHECK(tpf::zeros({784, 100}).dtype() == tpf::float32);
  CHECK(tpf::ones({3}, tpf::float64).to_vector<double>() ==
        std::vector<double>{1, 1, 1});
  CHECK(tpf::fill({2, 3}, 5.0f).to_vector<float>() ==
        std::vector<float>(6, 5.f));
  CHECK(tpf::arange(0, 10).to_vector<int>().back() == 9);
  CHECK(tpf::arange(10, 0, -3).to_vector<int>() ==
        std::vector<int>{10, 7, 4, 1});
  CHECK(tpf::eye(3).to_vector<float>() ==
        std::vector<float>{1, 0, 0, 0, 1, 0, 0, 0, 1});
  CHECK(tpf::scalar(4.5).item<float>() == 4.5f);
  CHECK_THROWS_AS(tpf::from_vector(std::vector<float>(5), {2, 3}),
                  tpf::ShapeError);
  CHECK_THROWS_AS(tpf::tensor({{1.0, 2.0}, {3.0}}), tpf::ShapeError);
  CHECK_THROWS_AS(tpf::ones({2}).item<float>(), tpf::ShapeError);
  CHECK_THROWS_AS(tpf::zeros({-1}), tpf::ShapeError);
  CHECK_THROWS_AS(tpf::ones({2}).data<double>(), tpf::DTypeError);
}

TEST_CASE("random numbers repeat under a seed and do not depend on threads") {
  tpf::manual_seed(42);
  const auto u = tpf::random_uniform({100000}, -1.0, 1.0);
  tpf::config::set_intra_op_threads(1);
  tpf::manual_seed(42);
  const auto u1 = tpf::random_uniform({100000}, -1.0, 1.0);
  tpf::config::set_intra_op_threads(2);
  CHECK(u.to_vector<float>() == u1.to_vector<float>());
  const auto v = u.to_vector<double>();
  CHECK(*std::min_element(v.begin(), v.end()) >= -1.0);
  CHECK(*std::max_element(v.begin(), v.end()) < 1.0);
  CHECK(tpf::mean(u).item<double>() ==
        doctest::Approx(0.0).epsilon(0.01).scale(1));
  const auto n = tpf::random_normal({100000}, 3.0, 2.0, tpf::float64);
  const double m = tpf::mean(n).item<double>();
  const double sd = std::sqrt(tpf::mean(tpf::square(n - m)).item<double>());
  CHECK(m == doctest::Approx(3.0).epsilon(0.01));
  CHECK(sd == doctest::Approx(2.0).epsilon(0.01));
  CHECK_THROWS_AS(tpf::random_uniform({2}, 1.0, 0.0), tpf::ValueError);
  CHECK_THROWS_AS(tpf::random_normal({2}, 0.0, 1.0, tpf::int32),
                  tpf::DTypeError);
}

namespace {
/** Philox4x32-10 written out again, checked below against Random123's
 * known answer; the generator's stream is word 0 (and 1) of counter i. */
std::array<uint32_t, 4> philox_ref(uint64_t counter, uint64_t key) {
  uint32_t c[4] = {uint32_t(counter), uint32_t(counter >> 32), 0, 0};
  uint32_t k[2] = {uint32_t(key), uint32_t(key >> 32)};
  for (int r = 0; r < 10; ++r) {
    const uint64_t p0 = uint64_t{0xD2511F53} * c[0];
    const uint64_t p1 = uint64_t{0xCD9E8D57} * c[2];
    const uint32_t next[4] = {uint32_t(p1 >> 32) ^ c[1] ^ k[0], uint32_t(p1),
                              uint32_t(p0 >> 32) ^ c[3] ^ k[1], uint32_t(p0)};
    std::copy_n(next, 4, c);
    k[0] += 0x9E3779B9;
    k[1] += 0xBB67AE85;
  }
  return {c[0], c[1], c[2], c[3]};
}
}  // namespace

TEST_CASE("uniform numbers are words of Philox4x32-10, counter by counter") {
  CHECK(philox_ref(0, 0) == std::array<uint32_t, 4>{0x6627e8d5, 0xe169c58d,
                                                    0xbc57ac4c, 0x9b00dbd8});
  // A range across a carry into the counter's high word, split over threads.
  const uint64_t seed = 0x0123456789abcdefULL, start = (1ULL << 32) - 4099;
  const tpf::RngState saved = tpf::get_rng_state();
  for (tpf::DType dt : {tpf::float32, tpf::float64}) {
    tpf::set_rng_state({seed, start});
    const auto u = tpf::random_uniform({10000}, 0.0, 1.0, dt);
    const auto v = u.to_vector<double>();
    bool same = true;
    for (uint64_t i = 0; i < v.size(); ++i) {
      const auto w = philox_ref(start + i, seed);
      const double expect =
          dt == tpf::float32
              ? (w[0] >> 8) * 0x1.0p-24
              : ((uint64_t{w[0]} << 21) ^ (w[1] >> 11)) * 0x1.0p-53;
      same &= v[i] == expect;
    }
    CHECK(same);
  }
  tpf::set_rng_state(saved);
}

TEST_CASE("printing is NumPy-like and elides large tensors") {
  std::ostringstream os;
  os << tpf::tensor({{1.0, 2.5}, {3.0, 4.0}});
  CHECK(
      os.str() ==
      "Tensor([[ 1., 2.5],\n        [ 3.,  4.]], shape=(2, 2), dtype=float64)");
  std::ostringstream big;
  big << tpf::zeros({100, 100});
  CHECK(big.str().find("...") != std::string::npos);
  CHECK(big.str().size() < 1000);
  // The edges are the tensor's own, whatever was cut between them.
  std::ostringstream edges;
  edges << tpf::reshape(tpf::arange<int64_t>(0, 2000, 1), {40, 50});
  CHECK(edges.str().rfind("Tensor([[   0,    1,    2, ...,   47,   48,   49],\n"
                          "        [  50,",
                          0) == 0);
  CHECK(edges.str().find("[1950, 1951, 1952, ..., 1997, 1998, 1999]], "
                         "shape=(40, 50), dtype=int64)") != std::string::npos);
  CHECK(edges.str().find(" 150,") == std::string::npos);
  // Only the edges reach the host: a broadcast view of 2^41 elements prints.
  std::ostringstream view;
  view << tpf::broadcast_to(tpf::tensor({1.5, 2.0}),
                            {int64_t{1} << 20, int64_t{1} << 20, 2});
  CHECK(view.str().rfind("Tensor([[[1.5,  2.],\n", 0) == 0);
  // Every axis is cut before anything is copied, and the loops visit only
  // the shown entries: a 1-D view of 2^62 elements never returned, a
  // 2^31 x 2^31 one copied 6 rows of 2^31 values (an allocation failure).
  std::ostringstream line;
  line << tpf::broadcast_to(tpf::tensor({1.5f}), {int64_t{1} << 62});
  CHECK(line.str() ==
        "Tensor([1.5, 1.5, 1.5, ..., 1.5, 1.5, 1.5], "
        "shape=(4611686018427387904,), dtype=float32)");
  std::ostringstream square;
  square << tpf::broadcast_to(tpf::tensor({{2.0f}}),
                              {int64_t{1} << 31, int64_t{1} << 31});
  CHECK(square.str().rfind("Tensor([[2., 2., 2., ..., 2., 2., 2.],\n", 0) == 0);
  std::ostringstream cube;
  cube << tpf::reshape(tpf::arange<int64_t>(0, 7 * 7 * 21, 1), {7, 7, 21});
  CHECK(
      cube.str().find("[ 420,  421,  422, ...,  438,  439,  440]],\n\n"
                      "        ...,\n"
                      "        [[ 588,  589,  590, ...,  606,  607,  608],") !=
      std::string::npos);
  CHECK(cube.str().find(
            "[1008, 1009, 1010, ..., 1026, 1027, 1028]]], shape=(7, 7, 21)") !=
        std::string::npos);
  std::ostringstream ints;
  ints << tpf::tensor({true, false});
  CHECK(ints.str() == "Tensor([ true, false], shape=(2,), dtype=bool)");
}

TEST_CASE("the CPU allocator caches freed blocks and counts bytes") {
  tpf::empty_cache();
  const auto s0 = tpf::memory_stats();
  { const auto t = tpf::zeros({1 << 20}); }
  const auto s1 = tpf::memory_stats();
  CHECK(s1.cached_bytes >= (size_t{4} << 20));
  CHECK(s1.peak_bytes >= s0.allocated_bytes + (size_t{4} << 20));
  { const auto t = tpf::zeros({1 << 20}); }
  const auto s2 = tpf::memory_stats();
  CHECK(s2.num_fresh == s1.num_fresh);  // reused, no new memory
  CHECK(reinterpret_cast<uintptr_t>(tpf::ones({3}).raw_data()) % 64 == 0);
  tpf::empty_cache();
  CHECK(tpf::memory_stats().cached_bytes == 0);
}

TEST_CASE("devices: one without a backend or past the count is a DeviceError") {
  CHECK(tpf::ones({2}).device() == tpf::Device::cpu());
  CHECK_THROWS_AS(tpf::ones({2}).to(tpf::Device::cuda(63)), tpf::DeviceError);
  CHECK_THROWS_AS(tpf::zeros({2}, tpf::float32, tpf::Device::cuda(63)),
                  tpf::DeviceError);
  try {
    (void)tpf::ones({2}).to(tpf::Device::cuda(63));
  } catch (const tpf::DeviceError& e) {
    CHECK(std::string(e.what()).rfind("[to]", 0) == 0);
    CHECK(std::string(e.what()).find("cuda:63") != std::string::npos);
  }
  CHECK(tpf::Device::cuda(1).str() == "cuda:1");
}

TEST_CASE("placement log prints each (op, device, backend) once") {
  const std::string log = testing::placement_log([] {
    const auto a = tpf::ones({2}) * tpf::ones({2});
    const auto b = tpf::ones({2}) * tpf::ones({2});
  });
  CHECK(log.find("mul -> cpu:0 (xsimd)") != std::string::npos);
  CHECK(log.find("mul -> cpu:0") == log.rfind("mul -> cpu:0"));
}

TEST_CASE("thread settings") {
  tpf::config::set_intra_op_threads(1);
  CHECK(tpf::config::intra_op_threads() == 1);
  const auto x = tpf::random_uniform({1 << 18});
  const double one = tpf::sum(x * 2.0).item<double>();
  tpf::config::set_intra_op_threads(2);
  CHECK(tpf::sum(x * 2.0).item<double>() == doctest::Approx(one).epsilon(1e-5));
  CHECK_THROWS_AS(tpf::config::set_intra_op_threads(0), tpf::ValueError);
  CHECK(tpf::config::soft_placement());
}
