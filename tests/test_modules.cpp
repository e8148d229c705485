// White-box: the optional modules libtapeflow loads itself are found beside
// it. A module that fails to load is no error for the user (its ops go to
// another kernel), so without this test a packaging mistake would show only
// as lost speed.
#include <doctest/doctest.h>

#include <vector>

#include "cpu/libxsmm/small_matmul.hpp"
#include "tapeflow/tapeflow.hpp"

namespace tpf = tapeflow;

TEST_CASE("libtapeflow_xsmm.so loads, and small products go through it") {
  CHECK(tpf::cpu::small_matmul_available());
  const tpf::Tensor a = tpf::tensor<float>({{0, 1, 2}, {3, 4, 5}});
  const tpf::Tensor b = tpf::tensor<float>({{0, 1}, {2, 3}, {4, 5}});
  tpf::Tensor out = tpf::zeros({2, 2});
  REQUIRE(tpf::cpu::small_matmul(a, b, out));
  CHECK(out.to_vector<float>() == std::vector<float>{10, 13, 28, 40});
}
