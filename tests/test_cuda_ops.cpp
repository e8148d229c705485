// CUDA kernels that the strict OpCase pass does not reach, against the CPU:
// the fused optimizer updates (which run inside Optimizer steps, not as
// ops), argmin's ties and NaN rule, max_pool2d_with_argmax's TensorFlow
// indices, max pooling's second order (MaxPoolGather), the data errors and
// edge rows of matrix_inverse and one_hot, gather with an empty output, a
// convolution too tall for one grid along y, filter gradients in split-K
// slices, the fused cross entropy's
// rows wider than a block and its extreme rows, matmul operands with odd
// strides on size-1 axes, elementwise broadcasts on both vector paths,
// reductions large enough for two passes and grouped loads, and the fused
// LSTM cell under a layer. The
// deferred gather error is test_cuda.cpp's. Skips (exit 77) where no GPU is
// present.
#define DOCTEST_CONFIG_IMPLEMENT
#include <iostream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "support/check.hpp"
#include "support/cuda_skip.hpp"

namespace nn = tpf::nn;
using testing::expect_error;
using testing::gpu;
using testing::has_gpu;
using testing::kNan;
using testing::uniform64;

namespace {

/**
 * What `f` writes to std::cerr while placement logging is on. The log names
 * each (op, device, backend) once per process, so a loop collects its
 * iterations' logs and checks them once.
 */
template <class F>
std::string placement_log(F&& f) {
  std::ostringstream captured;
  auto* old = std::cerr.rdbuf(captured.rdbuf());
  tpf::config::log_device_placement(true);
  f();
  tpf::config::log_device_placement(false);
  std::cerr.rdbuf(old);
  return captured.str();
}

/** Three optimizer steps on w0 with `grads`, on `device`; the final w. */
template <class Optimizer>
tpf::Tensor three_steps(Optimizer& optimizer, const tpf::Tensor& w0,
                        const std::vector<tpf::Tensor>& grads,
                        tpf::Device device) {
  tpf::Variable w(w0.to(device));
  for (const tpf::Tensor& g : grads)
    optimizer.apply_gradients({g.to(device)}, {w});
  return w.cpu();
}

/**
 * conv2d of x and w, and its gradients for a fixed random dy, on the GPU
 * against the CPU (float64).
 */
void check_conv_on_gpu(const tpf::Tensor& x, const tpf::Tensor& w,
                       const nn::ConvOptions& options) {
  const auto passes = [&](tpf::Device d) {
    const auto xv = x.to(d), wv = w.to(d);
    tpf::GradientTape tape;
    tape.watch(xv);
    tape.watch(wv);
    const auto y = nn::conv2d(xv, wv, options);
    const auto dy =
        tpf::stateless_random_uniform(y.shape(), 5, -1.0, 1.0, tpf::float64);
    const auto g = tape.gradient(y, {xv, wv}, {dy.to(d)});
    return std::vector<tpf::Tensor>{y.cpu(), g[0].cpu(), g[1].cpu()};
  };
  const auto on_cpu = passes(tpf::Device::cpu()), on_gpu = passes(gpu);
  for (size_t i = 0; i < on_cpu.size(); ++i) {
    CAPTURE(i);
    CHECK_CLOSE(on_gpu[i], on_cpu[i], 1e-10, 1e-10);
  }
}

}  // namespace

TEST_CASE("Adam and SGD steps on the GPU are the CPU's" *
          doctest::skip(!has_gpu())) {
  std::string log;
  for (const tpf::DType dt : {tpf::float32, tpf::float64}) {
    CAPTURE(dt);
    const tpf::Tensor w0 = uniform64({257, 33}).cast(dt);
    std::vector<tpf::Tensor> grads;
    for (int i = 0; i < 3; ++i) grads.push_back(uniform64({257, 33}).cast(dt));
    {
      tpf::optim::Adam cpu(0.01), cuda(0.01);
      const tpf::Tensor on_cpu =
          three_steps(cpu, w0, grads, tpf::Device::cpu());
      tpf::Tensor on_gpu;
      log += placement_log([&] { on_gpu = three_steps(cuda, w0, grads, gpu); });
      CHECK_CLOSE(on_gpu, on_cpu, 1e-6, 1e-7);
    }
    {
      tpf::optim::SGD cpu(0.1), cuda(0.1);
      const tpf::Tensor on_cpu =
          three_steps(cpu, w0, grads, tpf::Device::cpu());
      tpf::Tensor on_gpu;
      log += placement_log([&] { on_gpu = three_steps(cuda, w0, grads, gpu); });
      CHECK_CLOSE(on_gpu, on_cpu, 1e-6, 1e-7);
    }
  }
  CHECK(log.find("apply_adam -> cuda:0 (cuda)") != std::string::npos);
  CHECK(log.find("apply_gradient_descent -> cuda:0 (cuda)") !=
        std::string::npos);
  CHECK(log.find("soft placement") == std::string::npos);
}

TEST_CASE("argmin on the GPU takes the first minimum, or the first NaN" *
          doctest::skip(!has_gpu())) {
  const auto x = tpf::tensor(
      {{3.0, 1.0, 1.0, 2.0}, {4.0, kNan, 0.0, kNan}, {5.0, 5.0, 5.0, 5.0}});
  for (const tpf::DType dt : {tpf::float32, tpf::float64}) {
    CAPTURE(dt);
    const auto g = x.cast(dt).to(gpu);
    CHECK(tpf::argmin(g, 1).cpu().to_vector<int64_t>() ==
          std::vector<int64_t>{1, 1, 0});
    // Down the columns (a strided axis): NaN in column 1 and 3 wins.
    CHECK(tpf::argmin(g, 0).cpu().to_vector<int64_t>() ==
          std::vector<int64_t>{0, 1, 1, 1});
  }
  // Rows longer than a warp: the lanes' candidates merge in a tree.
  std::vector<double> row(1000, 2.0);
  row[700] = row[300] = -1.0;
  auto long_row = tpf::from_vector(row, {1000});
  CHECK(tpf::argmin(long_row.to(gpu), 0).cpu().to_vector<int64_t>() ==
        std::vector<int64_t>{300});
  row[900] = row[40] = kNan;
  long_row = tpf::from_vector(row, {1000});
  CHECK(tpf::argmin(long_row.to(gpu), 0).cpu().to_vector<int64_t>() ==
        std::vector<int64_t>{40});
  // Many ties (values on a grid of 4), every dtype, both axes: the CPU's.
  const auto grid = uniform64({33, 517}, 0.0, 4.0).cast(tpf::int32);
  for (const tpf::DType dt :
       {tpf::float32, tpf::float64, tpf::int32, tpf::int64}) {
    CAPTURE(dt);
    const auto h = grid.cast(dt);
    for (const int64_t axis : {0, 1})
      CHECK(tpf::argmin(h.to(gpu), axis).cpu().to_vector<int64_t>() ==
            tpf::argmin(h, axis).to_vector<int64_t>());
  }
}

TEST_CASE("max_pool2d_with_argmax on the GPU gives TensorFlow's indices" *
          doctest::skip(!has_gpu())) {
  // Values on a grid of three: windows hold ties, which go to the first
  // maximum in row-major window order. A NaN wins its window.
  auto x =
      uniform64({2, 3, 7, 9}, 0.0, 3.0).cast(tpf::int32).cast(tpf::float64);
  std::vector<double> v = x.to_vector<double>();
  v[17] = v[200] = kNan;
  x = tpf::from_vector(v, {2, 3, 7, 9});
  struct Case {
    nn::PoolOptions o;
    std::string layout;
  };
  const Case cases[] = {
      {{{2, 2}, {2, 2}}, "NCHW"},
      {{{3, 3}, {2, 2}, "SAME"}, "NCHW"},
      {{{2, 3}, {1, 2}, "VALID", "NHWC"}, "NHWC"},
  };
  for (const tpf::DType dt : {tpf::float32, tpf::float64})
    for (const Case& c : cases)
      for (const bool with_batch : {false, true}) {
        CAPTURE(dt);
        CAPTURE(c.layout);
        CAPTURE(with_batch);
        const auto input =
            c.layout == "NHWC" ? tpf::transpose(x, {0, 2, 3, 1}) : x;
        const auto h = input.cast(dt);
        const auto [y, idx] = nn::max_pool2d_with_argmax(h, c.o, with_batch);
        const auto [gy, gidx] =
            nn::max_pool2d_with_argmax(h.to(gpu), c.o, with_batch);
        CHECK(gidx.cpu().to_vector<int64_t>() == idx.to_vector<int64_t>());
        CHECK_CLOSE(gy.cpu(), y, 0.0, 0.0);
      }
}

namespace {

/** Max pooling, its gradient and the gradient of that (MaxPoolGather). */
std::vector<tpf::Tensor> pool_orders(const tpf::Tensor& x,
                                     const tpf::Tensor& dy,
                                     const tpf::Tensor& h,
                                     const nn::PoolOptions& o) {
  tpf::GradientTape outer;
  outer.watch(dy);
  tpf::GradientTape tape;
  tape.watch(x);
  const auto y = nn::max_pool2d(x, o);
  const auto dx = tape.gradient(y, {x}, {dy})[0];
  const auto gather = outer.gradient(dx, {dy}, {h})[0];
  return {y.cpu(), dx.cpu(), gather.cpu()};
}

}  // namespace

TEST_CASE("max pooling's second order on the GPU is the CPU's" *
          doctest::skip(!has_gpu())) {
  // Overlapping windows (stride < size) sum several dy into one input.
  std::string log;
  for (const nn::PoolOptions& o :
       {nn::PoolOptions{{2, 2}, {2, 2}}, nn::PoolOptions{{3, 3}, {1, 1}},
        nn::PoolOptions{{3, 2}, {2, 1}, "SAME"}}) {
    const auto x = uniform64({2, 3, 8, 7}, 0.0, 3.0).cast(tpf::int32);
    for (const tpf::DType dt : {tpf::float32, tpf::float64}) {
      CAPTURE(dt);
      const auto xd = x.cast(dt);
      const auto y_shape = nn::max_pool2d(xd, o).shape();
      const auto dy = uniform64(y_shape).cast(dt);
      const auto h = uniform64(xd.shape()).cast(dt);
      const auto on_cpu = pool_orders(xd, dy, h, o);
      std::vector<tpf::Tensor> on_gpu;
      log += placement_log(
          [&] { on_gpu = pool_orders(xd.to(gpu), dy.to(gpu), h.to(gpu), o); });
      const double rtol = dt == tpf::float32 ? 1e-6 : 1e-14;
      for (size_t i = 0; i < on_cpu.size(); ++i) {
        CAPTURE(i);
        CHECK_CLOSE(on_gpu[i], on_cpu[i], rtol, rtol);
      }
    }
  }
  CHECK(log.find("max_pool_gather -> cuda:0 (cuda)") != std::string::npos);
  CHECK(log.find("soft placement") == std::string::npos);
}

TEST_CASE("a singular matrix_inverse on the GPU is the CPU's ValueError" *
          doctest::skip(!has_gpu())) {
  const auto batch = tpf::tensor({{{2.0, 1.0}, {1.0, 3.0}},
                                  {{1.0, 2.0}, {2.0, 4.0}},  // singular
                                  {{4.0, 0.0}, {0.0, 5.0}}});
  std::string cpu_message;
  try {
    (void)tpf::matrix_inverse(batch);
  } catch (const tpf::ValueError& e) {
    cpu_message = e.what();
  }
  REQUIRE(cpu_message.find("batch index 1") != std::string::npos);
  for (const tpf::DType dt : {tpf::float32, tpf::float64}) {
    CAPTURE(dt);
    const auto g = batch.cast(dt).to(gpu);
    expect_error<tpf::ValueError>([&] { (void)tpf::matrix_inverse(g); },
                                  cpu_message);
    // The stream is usable afterwards, and an invertible batch inverts.
    const auto first = tpf::slice(batch, {0, 0, 0}, {1, -1, -1});
    const auto ok = tpf::matrix_inverse(first.cast(dt).to(gpu));
    CHECK_CLOSE(ok.cpu(), tpf::matrix_inverse(first).cast(dt),
                dt == tpf::float32 ? 1e-6 : 1e-14, 1e-7);
  }
}

TEST_CASE("one_hot on the GPU writes off_value rows for out-of-range indices" *
          doctest::skip(!has_gpu())) {
  for (const tpf::DType index_type : {tpf::int32, tpf::int64}) {
    CAPTURE(index_type);
    const auto indices =
        tpf::tensor<int64_t>({0, -1, 3, 2, 1}).cast(index_type);
    const auto y = tpf::one_hot(indices.to(gpu), 3, 2.0, -1.0, tpf::float64);
    CHECK(y.device() == gpu);
    CHECK(y.cpu().to_vector<double>() ==
          std::vector<double>{2, -1, -1,   //
                              -1, -1, -1,  // -1: out of range
                              -1, -1, -1,  // 3: out of range
                              -1, -1, 2,   //
                              -1, 2, -1});
    CHECK(
        y.cpu().to_vector<double>() ==
        tpf::one_hot(indices, 3, 2.0, -1.0, tpf::float64).to_vector<double>());
  }
}

TEST_CASE(
    "gather with an empty output runs no kernel, on the GPU as on the CPU" *
    doctest::skip(!has_gpu())) {
  // params (2, 0): the output (1, 0) has no element, and an op whose
  // outputs are all empty runs no kernel (TensorFlow checks no index
  // either), so index 5 is not reported on either device.
  const auto params = tpf::zeros({2, 0});
  for (const tpf::DType index_type : {tpf::int32, tpf::int64}) {
    CAPTURE(index_type);
    const auto bad = tpf::tensor<int64_t>({5}).cast(index_type);
    CHECK(tpf::gather(params, bad).shape() == tpf::Shape{1, 0});
    tpf::Tensor out;
    CHECK_NOTHROW(out = tpf::gather(params.to(gpu), bad.to(gpu)));
    CHECK(out.shape() == tpf::Shape{1, 0});
    CHECK_NOTHROW(tpf::synchronize(gpu));
  }
}

TEST_CASE(
    "a convolution with more col rows than a grid has blocks along y, on the "
    "GPU as on the CPU" *
    doctest::skip(!has_gpu())) {
  // 8192 in-channels × 3×3 taps = 73,728 rows of im2col's col matrix: its
  // kernel walks rows past CUDA's 65,535 blocks along y (the strict OpCase
  // tables stay far below).
  check_conv_on_gpu(uniform64({1, 8192, 4, 4}), uniform64({16, 8192, 3, 3}),
                    {.padding = "SAME"});
}

TEST_CASE(
    "filter gradients split along the batch and positions (split-K), on the "
    "GPU as on the CPU" *
    doctest::skip(!has_gpu())) {
  // Fewer than 16 output channels per group take the implicit GEMM, whose
  // filter gradient sums 8 x 16 x 16 = 2048 products per weight in 8 slices
  // and then sums the slices (core/conv_tile.hpp's implicit_wgrad_splits);
  // a grouped convolution, 4 x 18 x 18 in 5 slices. The OpCase tables'
  // batches are too small to split.
  check_conv_on_gpu(uniform64({8, 1, 20, 20}), uniform64({8, 1, 5, 5}), {});
  check_conv_on_gpu(uniform64({4, 4, 18, 18}), uniform64({6, 2, 3, 3}),
                    {.padding = "SAME", .groups = 2});
}

TEST_CASE(
    "sparse softmax cross entropy over rows wider than a block, on the GPU as "
    "on the CPU" *
    doctest::skip(!has_gpu())) {
  // 1000 classes: each of a block's 256 threads strides over several; 70
  // rows; labels of both index types; float32 and float64.
  const auto logits64 = uniform64({70, 1000}, -5.0, 5.0);
  const auto labels = tpf::cast(
      tpf::stateless_random_uniform({70}, 3, 0.0, 1000.0), tpf::int64);
  for (const tpf::DType dtype : {tpf::float32, tpf::float64}) {
    for (const tpf::DType label_type : {tpf::int32, tpf::int64}) {
      CAPTURE(dtype);
      CAPTURE(label_type);
      const auto logits = logits64.cast(dtype);
      const auto y = labels.cast(label_type);
      const auto passes = [&](const tpf::Tensor& x, const tpf::Tensor& l) {
        tpf::GradientTape tape;
        tape.watch(x);
        const auto loss = nn::sparse_softmax_cross_entropy_with_logits(l, x);
        const auto g = tape.gradient(tpf::sum(loss), {x})[0];
        return std::vector<tpf::Tensor>{loss.cpu(), g.cpu()};
      };
      const auto on_cpu = passes(logits, y);
      const auto on_gpu = passes(logits.to(gpu), y.to(gpu));
      const double tol = dtype == tpf::float32 ? 1e-5 : 1e-12;
      CHECK_CLOSE(on_gpu[0], on_cpu[0], tol, tol);
      CHECK_CLOSE(on_gpu[1], on_cpu[1], tol, tol);
    }
  }
}

TEST_CASE(
    "sparse softmax cross entropy's extreme rows, one class and no rows, on "
    "the GPU as on the CPU" *
    doctest::skip(!has_gpu())) {
  // A block per row with most of its threads idle: logits 2e4 apart, a
  // uniform row, NaN, -inf and +inf in a row (NaN matches NaN); rows of a
  // single class (loss and gradient 0); no rows.
  const double inf = std::numeric_limits<double>::infinity();
  const auto extreme = tpf::tensor({{0.0, 1e4, -1e4},
                                    {-1e4, -1e4, -1e4},
                                    {0.0, kNan, 1.0},
                                    {-inf, 0.0, 1.0},
                                    {inf, 0.0, 1.0}});
  const auto cases = std::vector<std::pair<tpf::Tensor, tpf::Tensor>>{
      {extreme, tpf::tensor<int64_t>({1, 0, 2, 1, 2})},
      {uniform64({4, 1}), tpf::zeros({4}, tpf::int64)},
      {tpf::zeros({0, 5}), tpf::zeros({0}, tpf::int32)}};
  for (const tpf::DType dtype : {tpf::float32, tpf::float64}) {
    CAPTURE(dtype);
    for (size_t c = 0; c < cases.size(); ++c) {
      CAPTURE(c);
      const auto passes = [&](tpf::Device d) {
        const auto x = cases[c].first.cast(dtype).to(d);
        tpf::GradientTape tape;
        tape.watch(x);
        const auto loss = nn::sparse_softmax_cross_entropy_with_logits(
            cases[c].second.to(d), x);
        const auto g = tape.gradient(tpf::sum(loss), {x})[0];
        return std::vector<tpf::Tensor>{loss.cpu(), g.cpu()};
      };
      const auto on_cpu = passes(tpf::Device::cpu()), on_gpu = passes(gpu);
      const double tol = dtype == tpf::float32 ? 1e-5 : 1e-12;
      CHECK_CLOSE(on_gpu[0], on_cpu[0], tol, tol);
      CHECK_CLOSE(on_gpu[1], on_cpu[1], tol, tol);
    }
  }
}

TEST_CASE(
    "matmul of contiguous views with odd strides on size-1 axes, on the GPU "
    "as on the CPU" *
    doctest::skip(!has_gpu())) {
  // Reshapes and broadcasts keep any stride on a size-1 axis; cuBLAS must
  // get canonical leading dimensions (an ld of 0 is refused): a broadcast
  // row, a column reshaped through size-1 axes, a batch of single rows.
  const auto w = uniform64({3, 4});
  const auto row = tpf::broadcast_to(tpf::tensor({1.0, 2.0, 3.0}), {1, 3});
  const auto column = tpf::reshape(
      tpf::broadcast_to(tpf::tensor({1.0, -2.0, 0.5, 4.0}), {1, 1, 4}), {4, 1});
  const auto rows = tpf::reshape(
      tpf::broadcast_to(tpf::tensor({0.5, 1.5, -1.0}), {2, 3}), {2, 1, 3});
  for (const tpf::DType dtype : {tpf::float32, tpf::float64}) {
    CAPTURE(dtype);
    const auto products = [&](tpf::Device d) {
      const auto wd = w.cast(dtype).to(d);
      return std::vector<tpf::Tensor>{
          tpf::matmul(row.cast(dtype).to(d), wd).cpu(),
          tpf::matmul(wd, column.cast(dtype).to(d)).cpu(),
          tpf::matmul(rows.cast(dtype).to(d), wd).cpu()};
    };
    const auto on_cpu = products(tpf::Device::cpu()), on_gpu = products(gpu);
    const double tol = dtype == tpf::float32 ? 1e-5 : 1e-12;
    for (size_t i = 0; i < on_cpu.size(); ++i) {
      CAPTURE(i);
      CHECK_CLOSE(on_gpu[i], on_cpu[i], tol, tol);
    }
  }
}

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
      tpf::where(cols64 > tpf::full({}, 0.9995), tpf::full({}, NAN), cols64);
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

TEST_CASE("an LSTM layer on the GPU takes the fused cell ops, as on the CPU" *
          doctest::skip(!has_gpu())) {
  // 37 units over 5 rows and 7 steps, with a tape (the fused walk: the
  // cell ops forward and back) and without (a step at a time, the forward
  // op); the same Variables on both devices. The placement log names an
  // (op, device) once per process: no other case here runs the cell ops.
  std::string log;
  for (const tpf::DType dtype : {tpf::float64, tpf::float32}) {
    CAPTURE(dtype);
    nn::RNNOptions o{.return_sequences = true, .return_state = true};
    o.dtype = dtype;
    o.kernel_initializer = nn::glorot_uniform(1);
    o.recurrent_initializer = nn::orthogonal(1.0, 2);
    o.bias_initializer = nn::random_uniform_initializer(-0.5, 0.5, 3);
    nn::LSTM layer(37, o);
    const auto x = uniform64({5, 7, 4}).cast(dtype);
    const auto h0 = uniform64({5, 37}).cast(dtype);
    const auto c0 = uniform64({5, 37}).cast(dtype);
    const auto passes = [&](tpf::Device d) {
      layer.to(d);
      const auto xd = x.to(d), hd = h0.to(d), cd = c0.to(d);
      std::vector<tpf::Tensor> out;
      {
        tpf::GradientTape tape;
        for (const auto& t : {xd, hd, cd}) tape.watch(t);
        const auto r = layer.call(xd, {.initial_state = {hd, cd}});
        const auto loss = tpf::sum(r.output * r.output) + tpf::sum(r.states[1]);
        std::vector<tpf::Tensor> sources{xd, hd, cd};
        for (const auto& p : layer.parameters()) sources.push_back(p);
        out = tape.gradient(loss, sources);
        out.push_back(r.output);
      }
      out.push_back(layer.call(xd, {.initial_state = {hd, cd}}).output);
      for (auto& t : out) t = t.cpu();
      return out;
    };
    const auto on_cpu = passes(tpf::Device::cpu());
    std::vector<tpf::Tensor> on_gpu;
    log += placement_log([&] { on_gpu = passes(gpu); });
    REQUIRE(on_gpu.size() == on_cpu.size());
    const double tol = dtype == tpf::float32 ? 1e-4 : 1e-10;
    for (size_t i = 0; i < on_cpu.size(); ++i) {
      CAPTURE(i);
      CHECK_CLOSE(on_gpu[i], on_cpu[i], tol, tol);
    }
  }
  CHECK(log.find("lstm_cell_forward -> cuda:0 (cuda)") != std::string::npos);
  CHECK(log.find("lstm_cell_backward -> cuda:0 (cuda)") != std::string::npos);
  CHECK(log.find("soft placement") == std::string::npos);
}

int main(int argc, char** argv) {
  doctest::Context context(argc, argv);
  const int rc = context.run();
  if (context.shouldExit()) return rc;
  return testing::gpu_test_exit_code(rc);
}
