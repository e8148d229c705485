#pragma once
// What the device-math tests (test_device_math, test_device_kernel_math)
// share: ulp distances, test_pool's pooling geometries with tie-heavy
// values, and the tree merge of a block reduction.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <type_traits>
#include <vector>

#include "core/welford.hpp"
#include "support/check.hpp"

namespace testing {

namespace tpf = tapeflow;

/** Distance in units in the last place between finite a and b. */
template <class T>
int64_t ulps(T a, T b) {
  using I = std::conditional_t<sizeof(T) == 4, int32_t, int64_t>;
  I ia, ib;
  std::memcpy(&ia, &a, sizeof(T));
  std::memcpy(&ib, &b, sizeof(T));
  // Map the sign-magnitude bits onto a line where neighbours differ by 1.
  const auto line = [](I i) {
    return i < 0 ? std::numeric_limits<I>::min() - i : i;
  };
  const int64_t d = int64_t(line(ia)) - int64_t(line(ib));
  return d < 0 ? -d : d;
}

/** One pooling of the table: input shape, window, strides, paddings. */
struct PoolCase {
  tpf::Shape x, k, s, lo, hi;
};

/** TensorFlow's SAME padding (low half rounded down) or VALID's none. */
inline PoolCase tf_padded(const tpf::Shape& x, const std::vector<int64_t>& k,
                          const std::vector<int64_t>& s, bool same) {
  PoolCase c{x, tpf::Shape(k), tpf::Shape(s), {}, {}};
  for (size_t i = 0; i < k.size(); ++i) {
    const int64_t in = x[2 + i], out = (in + s[i] - 1) / s[i];
    const int64_t total =
        same ? std::max<int64_t>((out - 1) * s[i] + k[i] - in, 0) : 0;
    c.lo.push_back(total / 2);
    c.hi.push_back(total - total / 2);
  }
  return c;
}

/** test_pool.cpp's geometries (rank 1-3, VALID and SAME, three strides)
 * and explicit asymmetric paddings. */
inline std::vector<PoolCase> pool_cases() {
  const tpf::Shape shapes[] = {{2, 3, 7}, {2, 3, 5, 7}, {1, 2, 5, 3, 4}};
  const std::vector<int64_t> ks[] = {{3}, {3, 2}, {2, 3, 2}};
  std::vector<PoolCase> cases;
  for (int nd = 1; nd <= 3; ++nd)
    for (const auto& s :
         {ks[nd - 1], std::vector<int64_t>(nd, 1), std::vector<int64_t>(nd, 2)})
      for (bool same : {false, true})
        cases.push_back(tf_padded(shapes[nd - 1], ks[nd - 1], s, same));
  cases.push_back({{2, 3, 6}, {4}, {3}, {3}, {1}});
  cases.push_back({{2, 2, 4, 5}, {3, 2}, {2, 1}, {2, 0}, {1, 1}});
  cases.push_back(
      {{1, 2, 5, 3, 4}, {2, 2, 2}, {1, 2, 2}, {1, 1, 0}, {0, 1, 1}});
  return cases;
}

/** Values from {0, ..., 4}, so windows tie often; a few NaN if asked. */
inline tpf::Tensor tied_values(const tpf::Shape& shape, bool with_nan,
                               uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::vector<double> v(static_cast<size_t>(shape.numel()));
  for (double& e : v) e = double(gen() % 5);
  if (with_nan)
    for (size_t i = 3; i < v.size(); i += 7 + gen() % 5) v[i] = testing::kNan;
  return tpf::from_vector(v, shape);
}

/** Merges as a block reduction does: i takes i + stride, strides halving. */
template <class T>
tpf::WelfordMoments<T> merge_tree(std::vector<tpf::WelfordMoments<T>> parts) {
  size_t width = 1;
  while (width < parts.size()) width *= 2;
  parts.resize(width);
  for (size_t stride = width / 2; stride > 0; stride /= 2)
    for (size_t i = 0; i < stride; ++i) parts[i].merge(parts[i + stride]);
  return parts[0];
}

}  // namespace testing
