// CUDA kernels that the strict OpCase pass does not reach, against the CPU:
// the fused optimizer updates (which run inside Optimizer steps, not as
// ops), argmin's ties and NaN rule, max_pool2d_with_argmax's TensorFlow
// indices, max pooling's second order (MaxPoolGather), the data errors and
// edge rows of matrix_inverse and one_hot, gather with an empty output,
// matmul operands with odd strides on size-1 axes. One binary with
// test_cuda_ops_nn.cpp (convolutions, the fused cross entropy, the LSTM
// cell) and test_cuda_ops_elementwise.cpp (broadcasts, reductions); the
// deferred gather error is test_cuda.cpp's. Skips (exit 77) where no GPU is
// present.
#define DOCTEST_CONFIG_IMPLEMENT
#include <string>
#include <vector>

#include "support/check.hpp"
#include "support/cuda_skip.hpp"
#include "support/device.hpp"

namespace nn = tpf::nn;
using testing::expect_error;
using testing::gpu;
using testing::has_gpu;
using testing::kNan;
using testing::placement_log;
using testing::uniform64;

namespace {

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

TEST_CASE("concat and stack of bool tensors, on the GPU as on the CPU" *
          doctest::skip(!has_gpu())) {
  // Copies move elements by their size: one byte here, which the OpCase
  // tables' float and integer tensors never take. A transposed input too.
  const auto a =
      tpf::greater(uniform64({3, 5}), tpf::scalar(0.0, tpf::float64));
  const auto b =
      tpf::greater(uniform64({5, 3}), tpf::scalar(0.2, tpf::float64));
  const auto joined = [&](tpf::Device d) {
    const auto ad = a.to(d), bt = tpf::transpose(b.to(d));
    return std::vector<tpf::Tensor>{tpf::concat({ad, bt}, 0).cpu(),
                                    tpf::concat({ad, bt}, 1).cpu(),
                                    tpf::stack({ad, bt}, 2).cpu()};
  };
  const auto on_cpu = joined(tpf::Device::cpu()), on_gpu = joined(gpu);
  for (size_t i = 0; i < on_cpu.size(); ++i) {
    CAPTURE(i);
    CHECK(on_gpu[i].dtype() == tpf::bool_);
    CHECK(on_gpu[i].shape() == on_cpu[i].shape());
    CHECK(on_gpu[i].to_vector<bool>() == on_cpu[i].to_vector<bool>());
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
    "matmul of contiguous views with odd strides on size-1 axes, on the GPU "
    "as on the CPU" *
    doctest::skip(!has_gpu())) {
  // Reshapes and broadcasts keep any stride on a size-1 axis; cuBLAS must
  // get canonical leading dimensions (an ld of 0 is refused). Views made on
  // each device (a copy to the GPU would lay them out anew): a row broadcast
  // from a vector (stride 0 on its size-1 axis), a column reshaped through
  // size-1 axes, a batch of single rows through expand_dims.
  const auto w = uniform64({3, 4});
  const auto vector3 = uniform64({3}), vector4 = uniform64({4});
  const auto batch = uniform64({2, 3});
  for (const tpf::DType dtype : {tpf::float32, tpf::float64}) {
    CAPTURE(dtype);
    const auto products = [&](tpf::Device d) {
      const auto on = [&](const tpf::Tensor& t) { return t.cast(dtype).to(d); };
      const auto row = tpf::broadcast_to(on(vector3), {1, 3});
      CHECK(row.is_contiguous());
      CHECK(row.strides()[0] == 0);
      const auto column =
          tpf::reshape(tpf::broadcast_to(on(vector4), {1, 1, 4}), {4, 1});
      const auto rows = tpf::expand_dims(on(batch), 1);
      return std::vector<tpf::Tensor>{tpf::matmul(row, on(w)).cpu(),
                                      tpf::matmul(on(w), column).cpu(),
                                      tpf::matmul(rows, on(w)).cpu()};
    };
    const auto on_cpu = products(tpf::Device::cpu()), on_gpu = products(gpu);
    const double tol = dtype == tpf::float32 ? 1e-5 : 1e-12;
    for (size_t i = 0; i < on_cpu.size(); ++i) {
      CAPTURE(i);
      CHECK_CLOSE(on_gpu[i], on_cpu[i], tol, tol);
    }
  }
}

int main(int argc, char** argv) {
  doctest::Context context(argc, argv);
  const int rc = context.run();
  if (context.shouldExit()) return rc;
  return testing::gpu_test_exit_code(rc);
}
