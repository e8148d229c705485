// Batch norm on the GPU over x seen as (N, C, S). Per-channel sums run on a
// channel x split grid (core/batch_norm_math.hpp plans it from the shape
// alone): each block reduces a contiguous chunk of one channel in double,
// a fixed tree merges the block's threads, and one thread per channel merges
// the chunks in order, so the result is the same on every run. A grid of one
// block per channel would leave most SMs idle at C = 32-64. The moments add
// values one at a time and merge by Chan's formula (core/welford.hpp); the
// gradient sums dy and dy (x - mean). The elementwise passes then apply
// per-channel coefficients.
#include <limits>

#include "check.hpp"
#include "context.hpp"
#include "core/batch_norm_math.hpp"
#include "core/creation_internal.hpp"
#include "core/dtype_dispatch.hpp"
#include "core/welford.hpp"
#include "grid.cuh"
#include "ops/nn/norm_ops.hpp"

namespace tapeflow::cuda {
namespace {

/** Blocks the channel sums aim for: a few waves of a large GPU. */
constexpr int64_t kTargetBlocks = 1024;

/** Moments of x's values, accumulated in double. */
template <class T>
struct MomentsOf {
  using Acc = WelfordMoments<double>;
  const T* x;
  __device__ void add(Acc& acc, int64_t, int64_t off) const {
    acc.add(double(x[off]));
  }
  __device__ static void merge(Acc& acc, const Acc& o) { acc.merge(o); }
};

/** Sums of dy and of dy (x - mean) for batch norm's gradient. */
struct GradSums {
  double dy, dy_xc;
};
template <class T>
struct GradSumsOf {
  using Acc = GradSums;
  const T *x, *dy, *mean;
  __device__ void add(Acc& acc, int64_t channel, int64_t off) const {
    const double g = double(dy[off]);
    acc.dy += g;
    acc.dy_xc += g * (double(x[off]) - double(mean[channel]));
  }
  __device__ static void merge(Acc& acc, const Acc& o) {
    acc.dy += o.dy;
    acc.dy_xc += o.dy_xc;
  }
};

/**
 * Block b reduces chunk b % splits of channel b / splits into partial[b]:
 * each thread over a strided share, then a tree over the block's threads.
 */
template <class Sums>
__global__ void channel_partials(ChannelSplit p, Sums sums,
                                 typename Sums::Acc* partial) {
  using Acc = typename Sums::Acc;
  // Raw storage: a __shared__ array may not run constructors.
  alignas(Acc) __shared__ unsigned char raw[kBlockThreads * sizeof(Acc)];
  Acc* shared = reinterpret_cast<Acc*>(raw);
  const int64_t channel = blockIdx.x / p.splits, part = blockIdx.x % p.splits;
  Acc acc{};
  for (int64_t j = p.begin(part) + threadIdx.x; j < p.end(part);
       j += blockDim.x)
    sums.add(acc, channel, p.offset(channel, j));
  shared[threadIdx.x] = acc;
  __syncthreads();
  for (int stride = blockDim.x / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride)
      Sums::merge(shared[threadIdx.x], shared[threadIdx.x + stride]);
    __syncthreads();
  }
  if (threadIdx.x == 0) partial[blockIdx.x] = shared[0];
}

/** Merges each channel's partials in order. */
template <class Sums>
__device__ typename Sums::Acc merged(const typename Sums::Acc* partial,
                                     int64_t channel, int64_t splits) {
  typename Sums::Acc acc = partial[channel * splits];
  for (int64_t k = 1; k < splits; ++k)
    Sums::merge(acc, partial[channel * splits + k]);
  return acc;
}

template <class T>
__global__ void finish_moments(const WelfordMoments<double>* partial,
                               int64_t channels, int64_t splits, T nan, T* mean,
                               T* variance) {
  for (int64_t c = grid_first(); c < channels; c += grid_step()) {
    const WelfordMoments<double> m = merged<MomentsOf<T>>(partial, c, splits);
    const bool empty = m.count == 0;
    const double var = m.variance();
    // No elements: NaN moments, as on the CPU.
    mean[c] = empty ? nan : T(m.mean);
    variance[c] = empty ? nan : T(var > 0 ? var : 0.0);
  }
}

/** Per channel: the forward's (a, b), from the scale, offset and moments. */
template <class T>
__global__ void affine_coefficients(int64_t channels, double epsilon,
                                    const T* scale, const T* offset,
                                    const T* mean, const T* variance, T* ab) {
  for (int64_t c = grid_first(); c < channels; c += grid_step()) {
    const BatchNormAffine<T> f(scale[c], offset[c], mean[c], variance[c],
                               epsilon);
    ab[2 * c] = f.a;
    ab[2 * c + 1] = f.b;
  }
}

template <class T>
__global__ void normalize(int64_t numel, int64_t channels, int64_t s,
                          const T* x, const T* ab, T* y) {
  for (int64_t i = grid_first(); i < numel; i += grid_step()) {
    const int64_t c = i / s % channels;
    y[i] = fma(x[i], ab[2 * c], ab[2 * c + 1]);
  }
}

/** Per channel: dscale, doffset and dx's (k, a, b) from the gradient sums. */
template <class T>
__global__ void grad_coefficients(const GradSums* partial, int64_t channels,
                                  int64_t splits, double count, double epsilon,
                                  bool training, const T* scale, const T* mean,
                                  const T* variance, T* dscale, T* doffset,
                                  T* kab) {
  for (int64_t c = grid_first(); c < channels; c += grid_step()) {
    const GradSums sum = merged<GradSumsOf<T>>(partial, c, splits);
    const BatchNormGradCoefficients f(scale[c], mean[c], variance[c], epsilon,
                                      training, count, sum.dy, sum.dy_xc);
    dscale[c] = T(f.dscale);
    doffset[c] = T(f.doffset);
    kab[3 * c] = T(f.k);
    kab[3 * c + 1] = T(f.a);
    kab[3 * c + 2] = T(f.b);
  }
}

template <class T>
__global__ void grad_input(int64_t numel, int64_t channels, int64_t s,
                           const T* dy, const T* x, const T* kab, T* dx) {
  for (int64_t i = grid_first(); i < numel; i += grid_step()) {
    const T* f = kab + 3 * (i / s % channels);
    dx[i] = fma(dy[i], f[0], fma(x[i], f[1], f[2]));
  }
}

template <class T>
const T* in_ptr(const Tensor& t) {
  return static_cast<const T*>(t.raw_data());
}
template <class T>
T* out_ptr(const Tensor& t) {
  return static_cast<T*>(t.raw_data());
}

ChannelSplit split_of(const Tensor& x) {
  const int64_t n = x.shape()[0], c = x.shape()[1];
  const int64_t s = n != 0 && c != 0 ? x.numel() / (n * c) : 0;
  return plan_channel_split(n, c, s, kBlockThreads, kTargetBlocks);
}

/**
 * The per-channel partial sums of `sums` over x (N, C, S) into a fresh
 * device buffer of C * splits accumulators.
 */
template <class Sums>
Tensor partial_sums(const ChannelSplit& p, const Sums& sums, Device device) {
  using Acc = typename Sums::Acc;
  static_assert(sizeof(Acc) % sizeof(double) == 0);
  const int64_t blocks = p.c * p.splits;
  Tensor buffer = empty_tensor({blocks * int64_t(sizeof(Acc) / sizeof(double))},
                               float64, device);
  channel_partials<Sums>
      <<<unsigned(blocks), kBlockThreads, 0, activate(device.index)>>>(
          p, sums, out_ptr<Acc>(buffer));
  TAPEFLOW_CUDA_CHECK(cudaGetLastError());
  return buffer;
}

/** Mean and biased variance of contiguous x per channel, into (C,) outputs. */
template <class T>
void moments(const Tensor& x, Tensor& mean, Tensor& variance) {
  const ChannelSplit p = split_of(x);
  if (p.c == 0) return;
  const Tensor partial =
      partial_sums(p, MomentsOf<T>{in_ptr<T>(x)}, x.device());
  finish_moments<T>
      <<<blocks_for(p.c), kBlockThreads, 0, activate(x.device().index)>>>(
          out_ptr<WelfordMoments<double>>(partial), p.c, p.splits,
          std::numeric_limits<T>::quiet_NaN(), out_ptr<T>(mean),
          out_ptr<T>(variance));
  TAPEFLOW_CUDA_CHECK(cudaGetLastError());
}

void batch_moments(const BatchMoments& op, Inputs in, const Outputs& outs) {
  const Tensor x = materialize(in[0]);
  dispatch_floating(x.dtype(), op.name, [&](auto tag) {
    moments<decltype(tag)>(x, outs[0], outs[1]);
  });
}

void fused_batch_norm(const FusedBatchNorm& op, Inputs in,
                      const Outputs& outs) {
  const Tensor x = materialize(in[0]), scale = materialize(in[1]),
               offset = materialize(in[2]);
  dispatch_floating(x.dtype(), op.name, [&](auto tag) {
    using T = decltype(tag);
    // Training normalizes with the batch's moments; inference with the
    // given statistics, which come back as outputs 1 and 2.
    if (op.training) {
      moments<T>(x, outs[1], outs[2]);
    } else {
      write_into(outs[1], in[3], op.name);
      write_into(outs[2], in[4], op.name);
    }
    const int64_t c = x.shape()[1];
    if (x.numel() == 0) return;
    const int device = x.device().index;
    const Tensor ab = empty_tensor({2 * c}, x.dtype(), x.device());
    affine_coefficients<T>
        <<<blocks_for(c), kBlockThreads, 0, activate(device)>>>(
            c, op.epsilon, in_ptr<T>(scale), in_ptr<T>(offset),
            in_ptr<T>(outs[1]), in_ptr<T>(outs[2]), out_ptr<T>(ab));
    TAPEFLOW_CUDA_CHECK(cudaGetLastError());
    const int64_t s = x.numel() / (x.shape()[0] * c);
    normalize<T><<<blocks_for(x.numel()), kBlockThreads, 0, activate(device)>>>(
        x.numel(), c, s, in_ptr<T>(x), in_ptr<T>(ab), out_ptr<T>(outs[0]));
    TAPEFLOW_CUDA_CHECK(cudaGetLastError());
  });
}

void batch_norm_grad(const BatchNormGrad& op, Inputs in, const Outputs& outs) {
  const Tensor x = materialize(in[0]), dy = materialize(in[1]),
               scale = materialize(in[2]), mean = materialize(in[3]),
               var = materialize(in[4]);
  const ChannelSplit p = split_of(x);
  if (p.c == 0) return;
  const int device = x.device().index;
  dispatch_floating(x.dtype(), op.name, [&](auto tag) {
    using T = decltype(tag);
    const Tensor partial = partial_sums(
        p, GradSumsOf<T>{in_ptr<T>(x), in_ptr<T>(dy), in_ptr<T>(mean)},
        x.device());
    const Tensor kab = empty_tensor({3 * p.c}, x.dtype(), x.device());
    grad_coefficients<T>
        <<<blocks_for(p.c), kBlockThreads, 0, activate(device)>>>(
            out_ptr<GradSums>(partial), p.c, p.splits, double(p.per_channel()),
            op.epsilon, op.training, in_ptr<T>(scale), in_ptr<T>(mean),
            in_ptr<T>(var), out_ptr<T>(outs[1]), out_ptr<T>(outs[2]),
            out_ptr<T>(kab));
    TAPEFLOW_CUDA_CHECK(cudaGetLastError());
    if (x.numel() == 0) return;
    grad_input<T>
        <<<blocks_for(x.numel()), kBlockThreads, 0, activate(device)>>>(
            x.numel(), p.c, p.s, in_ptr<T>(dy), in_ptr<T>(x), in_ptr<T>(kab),
            out_ptr<T>(outs[0]));
    TAPEFLOW_CUDA_CHECK(cudaGetLastError());
  });
}

}  // namespace

void register_norm(Registry& r) {
  constexpr auto gpu = DeviceType::cuda;
  r.set<FusedBatchNorm>(gpu, fused_batch_norm, "cuda");
  r.set<BatchNormGrad>(gpu, batch_norm_grad, "cuda");
  r.set<BatchMoments>(gpu, batch_moments, "cuda");
}

}  // namespace tapeflow::cuda
