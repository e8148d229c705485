// max_pool2d_with_argmax: TensorFlow's flattened NHWC indices by hand, and
// against a brute-force scan of every window on shapes the 2x2/2 fast path
// takes (odd extents: a row and a column in no window) and on windows it
// does not take (3x3 stride 2), with and without the batch in the index.
#include <vector>

#include "support/check.hpp"

namespace nn = tpf::nn;

namespace {

/**
 * TensorFlow's index of each window's first maximum of NHWC `x`, VALID
 * windows of k x k and stride s, in output order (n, oy, ox, c).
 */
std::vector<int64_t> scanned_argmax(const std::vector<double>& x,
                                    const tpf::Shape& shape, int64_t k,
                                    int64_t s, bool include_batch) {
  const int64_t n = shape[0], h = shape[1], w = shape[2], c = shape[3];
  const int64_t oh = (h - k) / s + 1, ow = (w - k) / s + 1;
  std::vector<int64_t> out;
  for (int64_t b = 0; b < n; ++b)
    for (int64_t oy = 0; oy < oh; ++oy)
      for (int64_t ox = 0; ox < ow; ++ox)
        for (int64_t ch = 0; ch < c; ++ch) {
          int64_t best = -1;
          for (int64_t dy = 0; dy < k; ++dy)
            for (int64_t dx = 0; dx < k; ++dx) {
              const int64_t at =
                  ((b * h + oy * s + dy) * w + ox * s + dx) * c + ch;
              if (best < 0 || x[at] > x[best]) best = at;
            }
          out.push_back(include_batch ? best : best - b * h * w * c);
        }
  return out;
}

}  // namespace

TEST_CASE("max_pool2d_with_argmax against a scan of every window") {
  // Values on a grid of five, so windows hold ties (the first maximum wins).
  const tpf::Shape shapes[] = {
      {2, 6, 8, 3}, {3, 7, 9, 5}, {1, 2, 2, 1}, {2, 28, 28, 16}};
  for (const tpf::Shape& shape : shapes)
    for (const int64_t k : {2, 3})
      for (const bool batch : {false, true})
        for (tpf::DType dt : {tpf::float32, tpf::float64}) {
          if (k > shape[1] || k > shape[2]) continue;
          CAPTURE(shape.str());
          CAPTURE(k);
          CAPTURE(batch);
          const auto x =
              testing::uniform64(shape, 0.0, 5.0).cast(tpf::int32).cast(dt);
          const nn::PoolOptions o{{k, k}, {2, 2}, "VALID", "NHWC"};
          const auto [y, idx] = nn::max_pool2d_with_argmax(x, o, batch);
          CHECK(idx.to_vector<int64_t>() ==
                scanned_argmax(x.cast(tpf::float64).to_vector<double>(), shape,
                               k, 2, batch));
        }
}

TEST_CASE("max_pool2d_with_argmax gives TensorFlow's NHWC indices") {
  // NHWC (1, 2, 4, 2), windows 2x2 stride 2: four maxima placed by hand.
  std::vector<double> v(16);
  for (int i = 0; i < 16; ++i) v[i] = -1.0 - 0.01 * i;
  v[8] = 5;   // h1 w0 c0
  v[3] = 6;   // h0 w1 c1
  v[14] = 7;  // h1 w3 c0
  v[5] = 8;   // h0 w2 c1
  const auto one = tpf::from_vector(v, {1, 2, 4, 2});
  const auto x = tpf::concat({one, one * 0.5}, 0);  // N = 2
  const nn::PoolOptions o{{2, 2}, {2, 2}, "VALID", "NHWC"};
  auto [out, idx] = nn::max_pool2d_with_argmax(x, o);
  CHECK(idx.dtype() == tpf::int64);
  CHECK(idx.shape() == tpf::Shape{2, 1, 2, 2});
  CHECK(idx.to_vector<int64_t>() ==
        std::vector<int64_t>{8, 3, 14, 5, 8, 3, 14, 5});
  CHECK(out.to_vector<double>() ==
        std::vector<double>{5, 6, 7, 8, 2.5, 3, 3.5, 4});
  auto [out_b, idx_b] = nn::max_pool2d_with_argmax(x, o, true);
  CHECK(idx_b.to_vector<int64_t>() ==
        std::vector<int64_t>{8, 3, 14, 5, 24, 19, 30, 21});
  // NCHW input: the same indices (still NHWC semantics), NCHW-shaped.
  auto [out_c, idx_c] = nn::max_pool2d_with_argmax(
      tpf::transpose(x, {0, 3, 1, 2}).cast(tpf::float32),
      {{2, 2}, {2, 2}, "VALID", "NCHW"}, true);
  CHECK(idx_c.shape() == tpf::Shape{2, 2, 1, 2});
  CHECK(tpf::transpose(idx_c, {0, 2, 3, 1}).contiguous().to_vector<int64_t>() ==
        idx_b.to_vector<int64_t>());
}
