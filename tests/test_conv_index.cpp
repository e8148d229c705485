// The GPU convolutions' index maps (src/core/conv_index.hpp) on the host:
// im2col + GEMM with gather-col2im, and the implicit GEMM's fprop, dgrad and
// wgrad (with split-K), each run through a naive GEMM in float64, equal the
// direct kernels (src/cpu/conv_direct.cpp) on every geometry of
// test_conv.cpp's tables and more, with operands channels-first, channels-
// last or mixed, read through strides; the FastDivmod splits they use, and
// the implicit GEMM's staging (one writer per shared element). White-box.
// The chooser: test_conv_plan.
#include <algorithm>
#include <cmath>

#include "conv_cases.hpp"
#include "core/conv_tile.hpp"

using namespace conv_cases;

namespace {

/**
 * c(m, n) = Σ a(m, k)·b(k, n) over k in [k0, k1), the maps giving offsets
 * into pa and pb (-1: a zero) and pc; beta 1 adds to c. Bounds-checked: an
 * offset outside its buffer throws.
 */
template <class A, class B, class C>
void naive_gemm(int64_t m, int64_t n, int64_t k0, int64_t k1, A a,
                const Buffer& pa, B b, const Buffer& pb, C c, Buffer& pc,
                double beta = 0) {
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double acc = 0;
      for (int64_t k = k0; k < k1; ++k) {
        const int64_t ai = a(i, k), bi = b(k, j);
        if (ai >= 0 && bi >= 0) acc += pa.at(ai) * pb.at(bi);
      }
      double& out = pc.at(c(i, j));
      out = beta == 0 ? acc : out + acc;
    }
}

/** The three passes by im2col + GEMM, `chunk` images per col buffer. */
Results by_im2col(const Problem& p, int64_t chunk) {
  Results r = nan_results(p);
  const tpf::ConvGeometry& g = p.g;
  const int64_t rows = g.cg * g.k_size();
  for (int64_t group = 0; group < g.groups; ++group)
    // An empty batch still runs one chunk: its GEMM writes dw's zeros.
    for (int64_t n0 = 0; n0 == 0 || n0 < g.n; n0 += chunk) {
      const int64_t images = std::min(chunk, g.n - n0);
      const tpf::Im2col im2col{g, group, n0, images};
      const tpf::ColumnSplit split = tpf::column_split(g);
      const tpf::GroupFilter filter{g, group};
      const tpf::GroupOutput output{g, group, n0};
      const int64_t cols = im2col.cols();
      REQUIRE(im2col.rows() == rows);
      const auto at = [cols](int64_t row, int64_t col) {
        return row * cols + col;
      };
      const auto at_transposed = [cols](int64_t col, int64_t row) {
        return row * cols + col;
      };
      Buffer col(rows * cols);
      for (int64_t row = 0; row < rows; ++row)
        for (int64_t j = 0; j < cols; ++j) {
          const int64_t offset = im2col(im2col.row(row), split, uint32_t(j));
          col.at(at(row, j)) = offset < 0 ? 0.0 : p.x.at(offset);
        }
      // fprop: Y_g = W_g·col.
      naive_gemm(g.og, cols, 0, rows, filter, p.w, at, col, output, r.y);
      // dgrad: col = W_gᵀ·dY_g, then each dx element gathers its entries.
      const auto filter_transposed = [&](int64_t row, int64_t o) {
        return filter(o, row);
      };
      Buffer dcol(rows * cols);
      naive_gemm(rows, cols, 0, g.og, filter_transposed, p.w, output, p.dy, at,
                 dcol);
      const tpf::Col2imGather gather{g, group, n0, images};
      const tpf::InputSplit inputs = tpf::input_split(g);
      for (int64_t e = 0; e < gather.elements(); ++e) {
        const tpf::Col2imElement el = gather.element(inputs, uint32_t(e));
        double sum = 0;
        gather.for_each_source(
            el, [&](int64_t row, int64_t j) { sum += dcol.at(at(row, j)); });
        r.dx.at(gather.target(el)) = sum;
      }
      // wgrad: dW_g += dY_g·colᵀ, beta 1 after the first chunk.
      naive_gemm(g.og, rows, 0, cols, output, p.dy, at_transposed, col, filter,
                 r.dw, n0 == 0 ? 0.0 : 1.0);
    }
  return r;
}

/** The three passes by the implicit GEMM maps, wgrad in `splits` slices. */
Results by_implicit_gemm(const Problem& p, int64_t splits) {
  Results r = nan_results(p);
  const tpf::ConvGeometry& g = p.g;
  for (int64_t group = 0; group < g.groups; ++group) {
    const tpf::FpropGemm f{g, group};
    const auto a_f = [&](int64_t i, int64_t k) { return f.a(i, k); };
    const auto b_f = [&](int64_t k, int64_t j) { return f.b(k, j); };
    const auto c_f = [&](int64_t i, int64_t j) { return f.c(i, j); };
    naive_gemm(f.m(), f.n(), 0, f.k(), a_f, p.x, b_f, p.w, c_f, r.y);
    const tpf::DgradGemm d{g, group};
    const auto a_d = [&](int64_t i, int64_t k) { return d.a(i, k); };
    const auto b_d = [&](int64_t k, int64_t j) { return d.b(k, j); };
    const auto c_d = [&](int64_t i, int64_t j) { return d.c(i, j); };
    naive_gemm(d.m(), d.n(), 0, d.k(), a_d, p.dy, b_d, p.w, c_d, r.dx);
    // wgrad: each slice of K into its own workspace (M, N) row-major, then
    // the slices added in order.
    const tpf::WgradGemm wg{g, group};
    const auto a_w = [&](int64_t i, int64_t k) { return wg.a(i, k); };
    const auto b_w = [&](int64_t k, int64_t j) { return wg.b(k, j); };
    const auto at = [&](int64_t i, int64_t j) { return i * wg.n() + j; };
    const tpf::SplitK split{wg.k(), splits};
    std::vector<Buffer> partial(splits, Buffer(wg.m() * wg.n()));
    for (int64_t s = 0; s < splits; ++s)
      naive_gemm(wg.m(), wg.n(), split.begin(s), split.end(s), a_w, p.dy, b_w,
                 p.x, at, partial[s]);
    for (int64_t i = 0; i < wg.m(); ++i)
      for (int64_t j = 0; j < wg.n(); ++j) {
        double sum = 0;
        for (const Buffer& slice : partial) sum += slice[at(i, j)];
        r.dw.at(wg.c(i, j)) = sum;
      }
  }
  return r;
}

/** Every path, chunk size and split on every layout of one case. */
void check_case(const Case& c) {
  // Activations and filter: both channels-first, both channels-last, and
  // channels-last activations with a channels-first filter.
  for (const auto& [act_last, filter_last] : kLayouts) {
    CAPTURE(c.name);
    CAPTURE(act_last);
    CAPTURE(filter_last);
    const Problem p = problem(c, act_last, filter_last);
    for (int64_t chunk :
         {int64_t{1}, int64_t{2}, std::max<int64_t>(1, p.g.n)}) {
      CAPTURE(chunk);
      check_results(p, by_im2col(p, chunk));
    }
    for (int64_t splits : {1, 3}) {
      CAPTURE(splits);
      check_results(p, by_implicit_gemm(p, splits));
    }
  }
}

}  // namespace

TEST_CASE("im2col, gather-col2im and implicit GEMM: test_conv's table") {
  const auto cases = option_table();
  CHECK(cases.size() == 72);
  for (const Case& c : cases) check_case(c);
}

TEST_CASE("im2col, gather-col2im and implicit GEMM: every other geometry") {
  for (const Case& c : other_cases()) check_case(c);
}

TEST_CASE("geometry pads 1-d and 2-d to three axes and keeps the strides") {
  const Case c =
      make_case("nwc", {2, 3, 7}, {4, 3, 3}, {2}, {1}, "SAME", {}, 1);
  const Layout xl = layout_of(c.x, true, false);
  CHECK(xl.strides == V{21, 1, 3});
  const tpf::ConvGeometry g = tpf::conv_geometry(
      c.attrs, tpf::Shape(c.x), tpf::Shape(c.w), tpf::Shape({2, 4, 4}),
      tpf::Shape(xl.strides), tpf::Shape({9, 3, 1}), tpf::Shape({16, 4, 1}));
  CHECK(g.in[0] == 1);
  CHECK(g.in[2] == 7);
  CHECK(g.out[2] == 4);
  CHECK(g.k[2] == 3);
  CHECK(g.stride[2] == 2);
  CHECK(g.pad[2] == 1);
  CHECK(g.cg == 3);
  CHECK(g.og == 4);
  CHECK(g.x_strides[1] == 1);
  CHECK(g.x_strides[4] == 3);
  // Output position 0 reads input -1 (padding) through tap 0, input 1
  // through tap 2; input 3 is read by position 1 through tap 2, and input 4
  // (a stride gap for tap 0) by none through it.
  CHECK(g.x_at_window(0, 0, 0, 0) == -1);
  CHECK(g.x_at_window(1, 2, 0, 2) == 21 + 2 + 3);
  CHECK(g.out_reading(3, 2) == 1);
  CHECK(g.out_reading(4, 0) == -1);
}

TEST_CASE("FastDivmod divides every dividend below 2^31 exactly") {
  // Divisors: small, powers of two and their neighbours, the extents the
  // convolutions split by, and the largest.
  std::vector<uint32_t> divisors = {1, 2, 3, 5, 7, 14, 28, 196, 784, 3136};
  for (uint32_t shift = 2; shift < 31; ++shift)
    for (const int64_t delta : {-1, 0, 1})
      divisors.push_back(uint32_t((int64_t{1} << shift) + delta));
  divisors.push_back(0x7fffffffu);
  std::vector<uint32_t> dividends = {0, 1, 2, 0x7ffffffeu, 0x7fffffffu};
  uint64_t state = 12345;
  for (int i = 0; i < 2000; ++i) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    dividends.push_back(uint32_t(state >> 33));  // below 2^31
  }
  for (const uint32_t d : divisors) {
    CAPTURE(d);
    const tpf::FastDivmod f(d);
    for (const uint32_t n :
         {d - 1, d, d + 1, 2 * d - 1, 2 * d, 0x7fffffffu / d * d - 1})
      if (n < 0x80000000u) dividends.push_back(n);
    uint32_t wrong = 0;  // the first dividend it gets wrong, plus one
    for (const uint32_t n : dividends) {
      uint32_t q, r;
      f.divmod(n, q, r);
      if (wrong == 0 && (q != n / d || r != n % d)) wrong = n + 1;
    }
    CHECK(wrong == 0);
  }
  // An empty axis's extent divides as 1.
  CHECK(tpf::FastDivmod(0).quotient(41) == 41);
}

TEST_CASE("implicit GEMM staging: each shared element has one writer") {
  // A block at the bottom-right edge of M, N and K: partial in all three.
  const Problem p = problem(make_case("tiles", {3, 20, 11, 13}, {70, 20, 3, 3},
                                      {1}, {1}, "SAME", {}, 1),
                            true, false);
  const tpf::FpropGemm gemm{p.g, 0};
  const int64_t m0 = 64 * (gemm.m() / 64), n0 = 64, k0 = 8 * (gemm.k() / 8);
  std::vector<int> writers(2 * 8 * 64, 0);
  for (int thread = 0; thread < tpf::ImplicitTile::kThreads; ++thread) {
    tpf::ImplicitSmem<double> smem;
    std::fill_n(&smem.a[0][0], 8 * 64, kNan);
    std::fill_n(&smem.b[0][0], 8 * 64, kNan);
    tpf::implicit_stage(gemm, p.x.data(), p.w.data(), gemm.m(), gemm.n(), m0,
                        n0, k0, gemm.k(), smem, thread);
    for (int i = 0; i < 8 * 64; ++i) {
      writers[i] += !std::isnan((&smem.a[0][0])[i]);
      writers[8 * 64 + i] += !std::isnan((&smem.b[0][0])[i]);
    }
  }
  for (int count : writers) CHECK(count == 1);
}
