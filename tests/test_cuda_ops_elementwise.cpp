// The CUDA elementwise and reduction paths beyond the strict OpCase pass,
// against the CPU: broadcasts along rows and columns (16-byte vectors),
// transposes through shared-memory tiles, reductions large enough for two
// passes and grouped loads, column sums and strided axes. Part of
// test_cuda_ops.
#include <vector>

#include "support/check.hpp"
#include "support/cuda_skip.hpp"

using testing::gpu;
using testing::has_gpu;
using testing::kNan;
using testing::uniform64;

TEST_CASE("broadcasts, slices and transposes on the GPU are the CPU's" *
          doctest::skip(!has_gpu())) {
  // Rows contiguous or broadcast in every operand take the row-vector path
  // (16-byte loads per row, elementwise.cuh); transposed inputs the tile
  // path (odd sizes, a batch of them, a transposed condition, a cast); rows
  // of 6 and a slice starting between vectors the element path. Single
  // rounding ops: equal to the bit.
  for (const tpf::DType dtype : {tpf::float32, tpf::float64}) {
    CAPTURE(dtype);
    const auto m = uniform64({64, 40}).cast(dtype);
    const auto row = uniform64({32}).cast(dtype);
    const auto column = uniform64({64, 1}).cast(dtype);
    const auto cube = uniform64({5, 6, 8}).cast(dtype);
    const auto cond = uniform64({64, 1}) > tpf::zeros({64, 1}, tpf::float64);
    const auto odd = uniform64({70, 45}).cast(dtype);
    const auto odd_cond = uniform64({70, 45}) > tpf::zeros({70, 45});
    const auto on = [&](tpf::Device d) {
      const auto x = m.to(d), r = row.to(d), c = column.to(d);
      const auto aligned = tpf::slice(x, {0, 4}, {64, 32});
      const auto between = tpf::slice(x, {0, 1}, {64, 32});
      return std::vector<tpf::Tensor>{
          (aligned + r).cpu(),
          (aligned * c).cpu(),
          (between - r).cpu(),
          tpf::where(cond.to(d), aligned, r).cpu(),
          aligned.contiguous().cpu(),
          tpf::cast(aligned, tpf::float32).cpu(),
          (cube.to(d) + tpf::slice(cube.to(d), {2, 0, 0}, {1, 6, 8})).cpu(),
          (tpf::slice(x, {0, 0}, {64, 6}) + tpf::slice(r, {0}, {6})).cpu(),
          (tpf::transpose(tpf::slice(x, {0, 0}, {32, 32})) + r).cpu(),
          (tpf::transpose(odd.to(d)) * tpf::slice(x, {0, 0}, {45, 1})).cpu(),
          tpf::transpose(cube.to(d), {0, 2, 1}).contiguous().cpu(),
          tpf::cast(tpf::transpose(odd.to(d)), tpf::float32).cpu(),
          tpf::where(tpf::transpose(odd_cond.to(d)), tpf::transpose(odd.to(d)),
                     tpf::slice(x, {0, 0}, {45, 1}))
              .cpu()};
    };
    const auto cpu = on(tpf::Device::cpu());
    const auto gpu_results = on(gpu);
    REQUIRE(cpu.size() == gpu_results.size());
    for (size_t i = 0; i < cpu.size(); ++i) {
      CAPTURE(i);
      CHECK_CLOSE(gpu_results[i], cpu[i], 0.0, 0.0);
    }
  }
}

TEST_CASE("reductions on the GPU: two passes, grouped loads, strided axes" *
          doctest::skip(!has_gpu())) {
  // Row-wise kernel: 2^21 + 3 elements (~512-1024 blocks of a first pass,
  // each thread loading a group of vectors, and a second pass); 3 rows of
  // 300,001 (two passes); 1024 rows of 4099 (one pass, every fourth row
  // starting a vector, the others element by element). Column kernel: 67
  // columns of 4099 rows (two passes), its transpose, a slice of 40 columns
  // (one pass), integers, NaNs in some columns, no rows. Strided blocks: an
  // NCHW bias gradient (kept channels between reduced axes). More outputs
  // than a grid's x extent (70,000 rows of 5: the kernel's loop over k).
  // Positive data: each float sum is large against its rounding.
  const auto flat64 = uniform64({(int64_t{1} << 21) + 3}, 0.0, 1.0);
  const auto rows64 = uniform64({3, 300001}, 0.0, 1.0);
  const auto wide64 = uniform64({1024, 4099}, 0.0, 1.0);
  const auto cols64 = uniform64({4099, 67}, 0.0, 1.0);
  const auto nchw64 = uniform64({6, 5, 7, 9}, 0.0, 1.0);
  const auto tall64 = uniform64({70000, 5}, 0.0, 1.0);
  const auto nan_cols64 =
      tpf::where(cols64 > tpf::full({}, 0.9995), tpf::full({}, kNan), cols64);
  for (const tpf::DType dtype : {tpf::float32, tpf::float64}) {
    CAPTURE(dtype);
    const auto flat = flat64.cast(dtype), rows = rows64.cast(dtype),
               wide = wide64.cast(dtype), cols = cols64.cast(dtype);
    const auto sums = [&](tpf::Device d) {
      const auto f = flat.to(d), r = rows.to(d), w = wide.to(d), c = cols.to(d);
      return std::vector<tpf::Tensor>{
          tpf::sum(f).cpu(),
          tpf::sum(r, {1}).cpu(),
          tpf::sum(w, {1}).cpu(),
          tpf::sum(c, {0}).cpu(),
          tpf::sum(tpf::transpose(c), {1}).cpu(),
          tpf::sum(c).cpu(),
          tpf::sum(tpf::slice(c, {0, 0}, {100, 40}), {0}).cpu(),
          tpf::sum(nchw64.cast(dtype).to(d), {0, 2, 3}).cpu()};
    };
    const auto exact = [&](tpf::Device d) {
      const auto f = flat.to(d), r = rows.to(d), c = cols.to(d);
      const auto n = nan_cols64.cast(dtype).to(d);
      return std::vector<tpf::Tensor>{
          tpf::max(f).cpu(),
          tpf::min(r, {1}).cpu(),
          tpf::max(c, {0}).cpu(),
          tpf::sum(tpf::cast(c * 1000.0, tpf::int64), {0}).cpu(),
          tpf::max(n, {0}).cpu(),
          tpf::min(n, {0}).cpu(),
          tpf::max(tall64.cast(dtype).to(d), {1}).cpu(),
          tpf::sum(tpf::zeros({0, 64}, dtype, d), {0}).cpu(),
          tpf::max(tpf::zeros({0, 64}, dtype, d), {0}).cpu()};
    };
    // Sums in another order than the CPU's: within rounding.
    const double tol = dtype == tpf::float32 ? 1e-4 : 1e-11;
    const auto sums_cpu = sums(tpf::Device::cpu()), sums_gpu = sums(gpu);
    for (size_t i = 0; i < sums_cpu.size(); ++i) {
      CAPTURE(i);
      CHECK_CLOSE(sums_gpu[i], sums_cpu[i], tol, tol);
    }
    const auto exact_cpu = exact(tpf::Device::cpu()), exact_gpu = exact(gpu);
    for (size_t i = 0; i < exact_cpu.size(); ++i) {
      CAPTURE(i);
      CHECK_CLOSE(exact_gpu[i], exact_cpu[i], 0.0, 0.0);
    }
    // The shape alone fixes the order of the sums: the same bits on a
    // second run, and from misaligned views (element by element) as from
    // their aligned copies (groups of 16-byte loads).
    const auto f = flat.to(gpu), w = wide.to(gpu);
    CHECK_CLOSE(tpf::sum(f).cpu(), sums_gpu[0], 0.0, 0.0);
    const auto view = tpf::slice(f, {1}, {flat.numel() - 1});
    CHECK_CLOSE(tpf::sum(view).cpu(), tpf::sum(view.contiguous()).cpu(), 0.0,
                0.0);
    const auto shifted = tpf::slice(w, {0, 1}, {1024, 4098});
    CHECK_CLOSE(tpf::sum(shifted, {1}).cpu(),
                tpf::sum(shifted.contiguous(), {1}).cpu(), 0.0, 0.0);
  }
}
