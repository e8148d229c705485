// The neural-network CUDA kernels beyond the strict OpCase pass, against the
// CPU: a convolution too tall for one grid along y, filter gradients in
// split-K slices, the fused cross entropy's rows wider than a block and its
// extreme rows, batch norm's channels split over blocks, the fused LSTM cell
// under a layer, and fractional max pooling's second order. Part of
// test_cuda_ops.
#include <limits>
#include <string>
#include <vector>

#include "support/check.hpp"
#include "support/cuda_skip.hpp"
#include "support/device.hpp"

namespace nn = tpf::nn;
using testing::gpu;
using testing::has_gpu;
using testing::kNan;
using testing::placement_log;
using testing::uniform64;

namespace {

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

/**
 * The fused cross entropy's loss and the gradient of its sum on the GPU
 * against the CPU, within `tol`.
 */
void check_xent_on_gpu(const tpf::Tensor& logits, const tpf::Tensor& labels,
                       double tol) {
  const auto passes = [&](tpf::Device d) {
    const auto x = logits.to(d);
    tpf::GradientTape tape;
    tape.watch(x);
    const auto loss =
        nn::sparse_softmax_cross_entropy_with_logits(labels.to(d), x);
    const auto g = tape.gradient(tpf::sum(loss), {x})[0];
    return std::vector<tpf::Tensor>{loss.cpu(), g.cpu()};
  };
  const auto on_cpu = passes(tpf::Device::cpu()), on_gpu = passes(gpu);
  CHECK_CLOSE(on_gpu[0], on_cpu[0], tol, tol);
  CHECK_CLOSE(on_gpu[1], on_cpu[1], tol, tol);
}

}  // namespace

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
      check_xent_on_gpu(logits64.cast(dtype), labels.cast(label_type),
                        dtype == tpf::float32 ? 1e-5 : 1e-12);
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
      check_xent_on_gpu(cases[c].first.cast(dtype), cases[c].second,
                        dtype == tpf::float32 ? 1e-5 : 1e-12);
    }
  }
}

TEST_CASE(
    "batch norm's channels split over several blocks each, on the GPU as on "
    "the CPU" *
    doctest::skip(!has_gpu())) {
  // A channel of at least 2 x 8 x 256 elements is reduced by several blocks
  // whose partial moments (and gradient sums) are then merged by Chan's
  // rule (core/batch_norm_math.hpp's plan_channel_split): 2 x 64 x 64
  // elements make 4 chunks, 3 x 50 x 50 make 3. The OpCase tables' channels
  // fit one block. Data centred at 100, where a merge of sums and squares
  // would lose digits.
  for (const tpf::Shape& shape :
       {tpf::Shape{2, 3, 64, 64}, tpf::Shape{3, 2, 50, 50}}) {
    for (const tpf::DType dtype : {tpf::float64, tpf::float32}) {
      CAPTURE(shape);
      CAPTURE(dtype);
      const auto x = uniform64(shape, 99.0, 101.0).cast(dtype);
      const auto scale = uniform64({shape[1]}, 0.5, 1.5).cast(dtype);
      const auto offset = uniform64({shape[1]}).cast(dtype);
      const auto dy = uniform64(shape).cast(dtype);
      const auto passes = [&](tpf::Device d) {
        const auto xd = x.to(d), sd = scale.to(d), od = offset.to(d);
        tpf::GradientTape tape;
        for (const auto& t : {xd, sd, od}) tape.watch(t);
        const auto r = nn::fused_batch_norm(xd, sd, od);
        auto out = tape.gradient(r.y, {xd, sd, od}, {dy.to(d)});
        for (const auto& t : {r.y, r.batch_mean, r.batch_var}) out.push_back(t);
        for (auto& t : out) t = t.cpu();
        return out;
      };
      const auto on_cpu = passes(tpf::Device::cpu());
      const auto on_gpu = passes(gpu);
      const double tol = dtype == tpf::float32 ? 1e-4 : 1e-9;
      for (size_t i = 0; i < on_cpu.size(); ++i) {
        CAPTURE(i);
        CHECK_CLOSE(on_gpu[i], on_cpu[i], tol, tol);
      }
    }
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

TEST_CASE("fractional max pooling's second order, on the GPU as on the CPU" *
          doctest::skip(!has_gpu())) {
  // The gradient of dx with respect to dy gathers h at the maxima the
  // workspace recorded (FractionalMaxPoolGather, which the OpCase tables'
  // first-order gradients never reach); each value is copied, so the
  // devices agree exactly. Overlapping regions and not; both dtypes.
  const auto x = uniform64({2, 13, 11, 3});
  for (const bool overlapping : {false, true}) {
    for (const tpf::DType dtype : {tpf::float64, tpf::float32}) {
      CAPTURE(overlapping);
      CAPTURE(dtype);
      const nn::FractionalPoolOptions o{.overlapping = overlapping, .seed = 6};
      const auto y_shape =
          nn::fractional_max_pool(x, {1.6, 1.4}, o).output.shape();
      const auto dy = uniform64(y_shape).cast(dtype);
      const auto h = uniform64(x.shape()).cast(dtype);
      const auto passes = [&](tpf::Device d) {
        const auto xd = x.cast(dtype).to(d), dyd = dy.to(d);
        tpf::GradientTape outer;
        outer.watch(dyd);
        tpf::GradientTape tape;
        tape.watch(xd);
        const auto y = nn::fractional_max_pool(xd, {1.6, 1.4}, o).output;
        const auto dx = tape.gradient(y, {xd}, {dyd})[0];
        const auto gather = outer.gradient(dx, {dyd}, {h.to(d)})[0];
        return std::vector<tpf::Tensor>{y.cpu(), dx.cpu(), gather.cpu()};
      };
      const auto on_cpu = passes(tpf::Device::cpu());
      std::vector<tpf::Tensor> on_gpu;
      const std::string log = placement_log([&] { on_gpu = passes(gpu); });
      for (size_t i = 0; i < on_cpu.size(); ++i) {
        CAPTURE(i);
        CHECK(on_gpu[i].to_vector<double>() == on_cpu[i].to_vector<double>());
      }
      CHECK(log.find("soft placement") == std::string::npos);
    }
  }
}
