// The CPU elementwise loop's paths against host loops: the 32 x 32 tiles that
// transposed planes walk, and the unit-stride rows (contiguous, a scalar on
// either side) that every dtype's comparisons, logic, where and arithmetic
// take.
#include <numeric>
#include <vector>

#include "support/check.hpp"

TEST_CASE("transposed inputs of large planes walk tiles: values as a loop") {
  // Planes of 70 x 100 and 129 x 65 (partial tiles at both edges), read
  // across their contiguous axis: add, a copy and a where of three operands.
  for (const tpf::Shape& shape :
       {tpf::Shape{3, 100, 70}, tpf::Shape{65, 129}}) {
    CAPTURE(shape.str());
    const int64_t rank = shape.size();
    const int64_t rows = shape[rank - 1], cols = shape[rank - 2];
    const int64_t planes = shape.numel() / (rows * cols);
    const auto a = tpf::reshape(
        tpf::arange(0.0, double(shape.numel()), 1.0, tpf::float64), shape);
    std::vector<int64_t> perm(rank);
    std::iota(perm.begin(), perm.end(), int64_t{0});
    std::swap(perm[rank - 1], perm[rank - 2]);
    const auto t = tpf::transpose(a, perm);  // (..., rows, cols), strided
    const auto b = tpf::full(t.shape(), 0.5, tpf::float64);
    const auto sum = (t + b).to_vector<double>();
    const auto copy = tpf::cast(t, tpf::float32).to_vector<float>();
    const auto picked =
        tpf::where(t > b, t, b * 2.0).to_vector<double>();  // t >= 0
    bool ok = true;
    for (int64_t p = 0; p < planes; ++p)
      for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < cols; ++j) {
          const double v = double((p * cols + j) * rows + i);
          const int64_t at = (p * rows + i) * cols + j;
          ok &= sum[at] == v + 0.5 && copy[at] == float(v) &&
                picked[at] == (v > 0.5 ? v : 1.0);
        }
    CHECK(ok);
  }
}

TEST_CASE("contiguous, broadcast and strided rows of every dtype agree") {
  // The unit-stride loops (contiguous rows, a scalar on either side) and the
  // strided loop (columns of a (n, 2) tensor) against a host loop, with an
  // odd length for the vector tails.
  const int64_t n = 1037;
  const auto pattern = [](int64_t i, int64_t mod) {
    return double(i * 7919 % mod) - double(mod / 2);
  };
  std::vector<double> wide(2 * n);
  for (int64_t i = 0; i < 2 * n; ++i) wide[i] = pattern(i, 11);
  const auto base = tpf::from_vector(wide, {n, 2});
  for (const tpf::DType dtype :
       {tpf::int32, tpf::int64, tpf::float32, tpf::float64, tpf::bool_}) {
    CAPTURE(tpf::dtype_name(dtype));
    const auto both = tpf::transpose(base.cast(dtype));  // (2, n), stride 2
    const auto strided_a = tpf::reshape(tpf::slice(both, {0, 0}, {1, n}), {n});
    const auto strided_b = tpf::reshape(tpf::slice(both, {1, 0}, {1, n}), {n});
    REQUIRE(!strided_a.is_contiguous());
    const auto contiguous_a = strided_a.contiguous();
    const auto contiguous_b = strided_b.contiguous();
    const auto two = tpf::scalar(2.0, dtype);
    const auto va = contiguous_a.to_vector<double>(),
               vb = contiguous_b.to_vector<double>();
    const double s = two.to_vector<double>()[0];
    for (const bool strided : {false, true}) {
      CAPTURE(strided);
      const auto& a = strided ? strided_a : contiguous_a;
      const auto& b = strided ? strided_b : contiguous_b;
      const auto less = tpf::less(a, b).to_vector<double>();
      const auto equal = tpf::equal(a, b).to_vector<double>();
      const auto above = tpf::greater(a, two).to_vector<double>();
      const auto below = tpf::greater(two, b).to_vector<double>();
      const auto both_true =
          tpf::logical_and(a != two, b != two).to_vector<double>();
      const auto picked = tpf::where(a < b, a, b).to_vector<double>();
      const auto negated = tpf::logical_not(a).to_vector<double>();
      int64_t bad = 0;
      for (int64_t i = 0; i < n; ++i) {
        bad += less[i] != double(va[i] < vb[i]);
        bad += equal[i] != double(va[i] == vb[i]);
        bad += above[i] != double(va[i] > s);
        bad += below[i] != double(s > vb[i]);
        bad += both_true[i] != double(va[i] != s && vb[i] != s);
        bad += picked[i] != (va[i] < vb[i] ? va[i] : vb[i]);
        bad += negated[i] != double(va[i] == 0);
      }
      if (dtype != tpf::bool_) {
        const auto sum = (a + b).to_vector<double>();
        const auto shifted = (two - a).to_vector<double>();
        const auto neg = tpf::neg(a).to_vector<double>();
        for (int64_t i = 0; i < n; ++i) {
          bad += sum[i] != va[i] + vb[i];
          bad += shifted[i] != s - va[i];
          bad += neg[i] != -va[i];
        }
      }
      CHECK(bad == 0);
    }
  }
}
