#pragma once
// Benchmark bodies shared between the tapeflow TUs (C++20) and the libtorch
// peer library (C++17). Plain declarations only: no tapeflow or torch headers,
// so each side compiles with its own standard and include set. main()
// registers every body in case order (see bench_main.cpp).
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdint>
#include <string>

namespace tfbench {

/** Elementwise ops benchmarked by every implementation. */
enum class EwOp { add, mul, exp, relu };

inline const char* ew_name(EwOp op) {
  switch (op) {
    case EwOp::add:
      return "add";
    case EwOp::mul:
      return "mul";
    case EwOp::exp:
      return "exp";
    case EwOp::relu:
      return "relu";
  }
  return "?";
}
/** Operands streamed per element: inputs + output. */
inline int ew_operands(EwOp op) {
  return op == EwOp::add || op == EwOp::mul ? 3 : 2;
}

/** Ops in the overhead_chain case (alternating x * c and x + c). */
inline constexpr int kChainOps = 100;
/** A persistent tape is reset after this many recorded ops. */
inline constexpr int64_t kTapeResetEvery = 1024;

/** Reports bytes/s for an elementwise op over n float32 elements. */
inline void set_ew_bytes(benchmark::State& state, EwOp op, int64_t n) {
  state.SetBytesProcessed(state.iterations() * ew_operands(op) * 4 * n);
}
/** Counter GFLOP, a rate (GFLOP/s): 2 n^3 flops per n x n x n matmul. */
inline void set_matmul_flops(benchmark::State& state, int64_t n) {
  state.counters["GFLOP"] =
      benchmark::Counter(2.0 * double(n) * double(n) * double(n) * 1e-9 *
                             double(state.iterations()),
                         benchmark::Counter::kIsRate);
}
/** conv2d geometry: x (n, c, hw, hw), filter (o, c, k, k), stride 1, pad
 * `pad` on every side (so the output is (n, o, hw, hw) for pad = k / 2). */
struct ConvShape {
  const char* name;
  int64_t n, c, o, hw, k, pad;
};
/** The issue-3 cases: conv2d_a, conv2d_b, conv2d_c. */
inline constexpr ConvShape kConvShapes[] = {{"a", 64, 1, 32, 28, 5, 2},
                                            {"b", 64, 32, 64, 14, 5, 2},
                                            {"c", 32, 64, 64, 56, 3, 1}};
/** max_pool2d 2x2 stride 2 on x (NCHW) of `dims`; case max_pool2d<name>_*. */
struct PoolShape {
  const char* name;
  int64_t dims[4];
};
/** The issue-3 case, and the CNN's second pool (rows of 7 outputs). */
inline constexpr PoolShape kPoolShapes[] = {{"", {64, 32, 28, 28}},
                                            {"_14x14", {64, 64, 14, 14}}};
/** batch norm (training) on kBnShape (NCHW), epsilon kBnEps. */
inline constexpr int64_t kBnShape[] = {64, 64, 56, 56};
inline constexpr double kBnEps = 1e-3;
/** Counter GFLOP, a rate: 2 flops per multiply-add, x3 for fwd + 2 grads. */
inline void set_conv_flops(benchmark::State& state, const ConvShape& s,
                           bool train) {
  const int64_t out = s.hw + 2 * s.pad - s.k + 1;
  const double f =
      2.0 * double(s.n * s.o * out * out) * double(s.c * s.k * s.k);
  state.counters["GFLOP"] = benchmark::Counter(
      (train ? 3.0 : 1.0) * f * 1e-9 * double(state.iterations()),
      benchmark::Counter::kIsRate);
}
/** train_step_* cases: batch sizes of the two MNIST samples. */
inline constexpr int64_t kCnnBatch = 64;
inline constexpr int64_t kSoftmaxBatch = 100;
// train_step_mlp: 64 -> 64 tanh -> 64 tanh -> 4, batch 32, mean squared error.
inline constexpr int64_t kMlpBatch = 32, kMlpWidth = 64, kMlpOutputs = 4;
/** Counter images, a rate (images/s): `batch` images per iteration. */
inline void set_images_per_second(benchmark::State& state, int64_t batch) {
  state.counters["images"] = benchmark::Counter(
      double(batch) * double(state.iterations()), benchmark::Counter::kIsRate);
}
/** lstm_train: an LSTM layer's forward and backward (the issue-17 case). */
struct LstmShape {
  int64_t batch = 32, time = 100, features = 256, units = 256;
};
inline constexpr LstmShape kLstm{};
/** Counter sequences, a rate (sequences/s). */
inline void set_sequences_per_second(benchmark::State& state, int64_t batch) {
  state.counters["sequences"] = benchmark::Counter(
      double(batch) * double(state.iterations()), benchmark::Counter::kIsRate);
}
/**
 * The loop of a training-step case, for tapeflow's and libtorch's tensors
 * alike: `warmup` steps, one more whose loss must be finite (else the case
 * is skipped with an error naming `who`), then one step() per iteration.
 * Returns false when skipped.
 */
template <class Step>
bool time_steps(benchmark::State& state, Step&& step, int warmup,
                const char* who) {
  for (int i = 0; i < warmup; ++i) step();
  if (!std::isfinite(step().template item<double>())) {
    state.SkipWithError((std::string(who) + ": non-finite loss").c_str());
    return false;
  }
  for (auto _ : state) {
    auto loss = step();
    benchmark::DoNotOptimize(loss);
  }
  return true;
}
/** Seconds per op of the chain, forward + gradient (shown as per_op). */
inline void set_chain_per_op(benchmark::State& state) {
  state.counters["per_op"] = benchmark::Counter(
      double(state.iterations()) * kChainOps,
      benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

// --- tapeflow (bench_overhead.cpp, bench_elementwise.cpp, bench_reduce.cpp,
// bench_matmul.cpp) ----------------------------------------------------------
void tf_overhead_add(benchmark::State& state);
void tf_overhead_add_taped(benchmark::State& state);
void tf_overhead_add_new_tape(benchmark::State& state);
void tf_overhead_add_profiled(benchmark::State& state);
void tf_overhead_chain(benchmark::State& state);
void tf_elementwise(benchmark::State& state, EwOp op, int64_t n);
void tf_sum(benchmark::State& state, int64_t n);
void tf_count_nonzero(benchmark::State& state, int64_t n);
/** Sparse softmax cross-entropy, forward + gradient wrt the logits. */
void tf_softmax_xent(benchmark::State& state, int64_t batch, int64_t classes);
void tf_matmul(benchmark::State& state, int64_t n);
// nn cases (bench_nn_conv.cpp; raw oneDNN in onednn_peer_nn.cpp; libtorch in
// torch_peer_nn.cpp). train = forward + gradients wrt input and filter (conv),
// input (pool), input, scale and offset (batch norm) for a fixed dy.
// conv2d with channels_last: x (n, hw, hw, c), filter (k, k, c, o), the
// layout TensorFlow users hold (data_format NHWC); the raw oneDNN peer then
// takes and returns nhwc activations.
void tf_conv2d(benchmark::State& state, ConvShape s, bool train,
               bool channels_last);
void tf_max_pool2d(benchmark::State& state, PoolShape s, bool train);
/** max_pool2d_with_argmax (forward, output and indices) on the same shapes. */
void tf_max_pool2d_with_argmax(benchmark::State& state, PoolShape s);
void tf_batch_norm(benchmark::State& state, bool train);
void onednn_conv2d(benchmark::State& state, ConvShape s, bool train,
                   bool channels_last);
void onednn_max_pool2d(benchmark::State& state, PoolShape s, bool train);
void onednn_batch_norm(benchmark::State& state, bool train);
// train_step_cnn / train_step_softmax (bench_train.cpp; libtorch in
// torch_peer_train.cpp): forward, gradient and Adam 1e-3 / SGD 0.5 update of
// the mnist_cnn / mnist_softmax model on a fixed random batch.
// train_step_cnn_bf16: the CNN step with bfloat16 products, through float32
// precision `medium` (tapeflow) and CPU autocast to bfloat16 (libtorch).
void tf_train_step_cnn(benchmark::State& state, bool bf16_products);
void tf_train_step_softmax(benchmark::State& state);
// train_step_mlp: the same step (Adam 1e-3) of a 64-64-64-4 tanh MLP at batch
// 32, regression to fixed random targets: per-op cost, not arithmetic.
void tf_train_step_mlp(benchmark::State& state);
// lstm_train (bench_rnn.cpp; libtorch's torch::nn::LSTM in torch_peer_rnn.cpp):
// one LSTM layer over (batch, time, features), batch-major, every step's h
// returned; forward and the gradients w.r.t. the weights of sum(h).
void tf_lstm_train(benchmark::State& state);
// adam_update (bench_optim.cpp): one Adam step over mnist_cnn's parameters,
// against a loop with its access pattern (bytes/s).
void tf_adam_update(benchmark::State& state);
void stream_adam_update(benchmark::State& state);
// tfrecord_read (bench_records.cpp): one pass over a 128 MiB TFRecord file of
// 1 KiB records, by TFRecordReader and by plain read() (counters: bytes/s,
// items = records/s).
void tf_tfrecord_read(benchmark::State& state);
void raw_tfrecord_read(benchmark::State& state);
/**
 * input_pipeline_{no_prefetch,prefetch} (bench_data.cpp): a consumer whose
 * step costs kPipelineStepUs reads batches of kPipelineBatch from
 * map(kPipelineMapUs per element).batch() (.prefetch(2) when `prefetch`).
 * Counter wait_us: consumer time per step spent waiting in get_next().
 */
inline constexpr int64_t kPipelineMapUs = 20, kPipelineBatch = 32,
                         kPipelineStepUs = 1000;
void tf_input_pipeline(benchmark::State& state, bool prefetch);
/** STREAM-style OpenMP loop over preallocated arrays (bench_stream.cpp). */
void stream_elementwise(benchmark::State& state, EwOp op, int64_t n);
/** Raw dnnl::matmul primitive, created once outside the timed loop. */
void onednn_matmul(benchmark::State& state, int64_t n);

// --- libtorch peer (torch_peer_*.cpp; only with TAPEFLOW_HAVE_TORCH) ---------
namespace torch_peer {
/** at::set_num_threads(n). */
void set_threads(int n);
int threads();
std::string version();
void overhead_add(benchmark::State& state);
void overhead_add_taped(benchmark::State& state);
void overhead_chain(benchmark::State& state);
void elementwise(benchmark::State& state, EwOp op, int64_t n);
void sum(benchmark::State& state, int64_t n);
void softmax_xent(benchmark::State& state, int64_t batch, int64_t classes);
void matmul(benchmark::State& state, int64_t n);
void conv2d(benchmark::State& state, ConvShape s, bool train);
void max_pool2d(benchmark::State& state, PoolShape s, bool train);
void batch_norm(benchmark::State& state, bool train);
void train_step_cnn(benchmark::State& state, bool bf16_autocast);
void train_step_softmax(benchmark::State& state);
void train_step_mlp(benchmark::State& state);
void lstm_train(benchmark::State& state);
}  // namespace torch_peer

}  // namespace tfbench
