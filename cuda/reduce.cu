// Reductions: blocks of threads stride over the reduced elements of one
// output and combine through shared memory. Few outputs over many elements
// (a full sum) split each output's range across blocks, then reduce the
// partial results in a second pass, so the whole GPU takes part.
#include <algorithm>
#include <limits>

#include "check.hpp"
#include "context.hpp"
#include "core/creation_internal.hpp"
#include "core/dtype_dispatch.hpp"
#include "ops/reduce_ops.hpp"

namespace tapeflow::cuda {
namespace {

constexpr int kThreads = 256;

struct Block {
  int rank = 0;
  bool dense = true;  // offset(i) == i * unit: no index arithmetic
  int64_t unit = 1;
  int64_t shape[kMaxRank];
  int64_t strides[kMaxRank];

  void add(int64_t extent, int64_t stride) {
    shape[rank] = extent;
    strides[rank] = stride;
    ++rank;
    int64_t expected = strides[rank - 1];
    dense = true;
    for (int d = rank - 1; d >= 0; --d) {
      if (shape[d] != 1 && strides[d] != expected) dense = false;
      expected *= shape[d];
    }
    unit = strides[rank - 1];
  }
  __device__ int64_t offset(int64_t i) const {
    if (dense) return i * unit;
    int64_t off = 0;
    for (int d = rank - 1; d >= 0; --d) {
      off += (i % shape[d]) * strides[d];
      i /= shape[d];
    }
    return off;
  }
};

struct SumR {
  template <class T>
  __device__ T operator()(T a, T b) const {
    return a + b;
  }
};
struct ProdR {
  template <class T>
  __device__ T operator()(T a, T b) const {
    return a * b;
  }
};
// A reduced NaN makes max and min NaN, as on the CPU.
struct MaxR {
  template <class T>
  __device__ T operator()(T a, T b) const {
    return a > b || a != a ? a : b;
  }
};
struct MinR {
  template <class T>
  __device__ T operator()(T a, T b) const {
    return a < b || a != a ? a : b;
  }
};

/**
 * Block (k, p) reduces elements [p * chunk, (p + 1) * chunk) of output k and
 * writes out[k * gridDim.y + p].
 */
template <class T, class R>
__global__ void reduce_kernel(Block kept, Block reduced, int64_t K, int64_t N,
                              int64_t chunk, T identity, const T* in, T* out,
                              R combine) {
  __shared__ T partial[kThreads];
  const int64_t begin = int64_t(blockIdx.y) * chunk;
  const int64_t end = begin + chunk < N ? begin + chunk : N;
  for (int64_t k = blockIdx.x; k < K; k += gridDim.x) {
    const int64_t base = kept.offset(k);
    T acc = identity;
    for (int64_t r = begin + threadIdx.x; r < end; r += blockDim.x)
      acc = combine(acc, in[base + reduced.offset(r)]);
    partial[threadIdx.x] = acc;
    __syncthreads();
    for (int half = blockDim.x / 2; half > 0; half /= 2) {
      if (threadIdx.x < half)
        partial[threadIdx.x] =
            combine(partial[threadIdx.x], partial[threadIdx.x + half]);
      __syncthreads();
    }
    if (threadIdx.x == 0) out[k * gridDim.y + blockIdx.y] = partial[0];
    __syncthreads();
  }
}

template <class T, class R>
void launch(cudaStream_t stream, const Block& kept, const Block& reduced,
            int64_t K, int64_t N, int64_t parts, T identity, const T* in,
            T* out) {
  const int64_t chunk = (N + parts - 1) / parts;
  const dim3 grid(static_cast<unsigned>(std::min<int64_t>(K, 65535)),
                  static_cast<unsigned>(parts));
  reduce_kernel<T, R><<<grid, kThreads, 0, stream>>>(kept, reduced, K, N, chunk,
                                                     identity, in, out, R{});
  TAPEFLOW_CUDA_CHECK(cudaGetLastError());
}

template <class T, class R>
void run(const ReduceOp& op, const Tensor& x, Tensor& out, T identity) {
  Block kept, reduced;
  for (int64_t i = 0; i < x.rank(); ++i)
    (op.reduces(i) ? reduced : kept).add(x.shape()[i], x.strides()[i]);
  const int64_t K = out.numel(), N = K ? x.numel() / K : 0;
  if (K == 0) return;
  const cudaStream_t stream = activate(x.device().index);
  const T* in = static_cast<const T*>(x.raw_data());
  T* o = static_cast<T*>(out.raw_data());
  // Enough blocks to fill the GPU, each with at least 4 elements a thread.
  constexpr int64_t kTargetBlocks = 1024;
  const int64_t parts = std::clamp<int64_t>(
      std::min(kTargetBlocks / K, N / (4 * kThreads)), 1, 65535);
  if (parts == 1) {
    launch<T, R>(stream, kept, reduced, K, N, 1, identity, in, o);
    return;
  }
  Tensor partial = empty_tensor({K, parts}, out.dtype(), out.device());
  launch<T, R>(stream, kept, reduced, K, N, parts, identity, in,
               static_cast<T*>(partial.raw_data()));
  Block rows, cols;
  rows.add(K, parts);
  cols.add(parts, 1);
  launch<T, R>(stream, rows, cols, K, parts, 1, identity,
               static_cast<const T*>(partial.raw_data()), o);
}

template <class R, class Op, class Identity>
void reduce(const Op& op, Inputs in, const Outputs& outs) {
  Tensor& out = outs[0];
  dispatch_numeric(in[0].dtype(), Op::name, [&](auto tag) {
    using T = decltype(tag);
    run<T, R>(op, in[0], out, Identity{}.template operator()<T>());
  });
}

struct Zero {
  template <class T>
  T operator()() const {
    return T(0);
  }
};
struct One {
  template <class T>
  T operator()() const {
    return T(1);
  }
};
// -inf / +inf for floats (the max / min of nothing, as on the CPU).
struct Lowest {
  template <class T>
  T operator()() const {
    using L = std::numeric_limits<T>;
    return L::has_infinity ? -L::infinity() : L::lowest();
  }
};
struct Highest {
  template <class T>
  T operator()() const {
    using L = std::numeric_limits<T>;
    return L::has_infinity ? L::infinity() : L::max();
  }
};

}  // namespace

void register_reduce(Registry& r) {
  constexpr auto gpu = DeviceType::cuda;
  r.set<Sum>(gpu, reduce<SumR, Sum, Zero>, "cuda");
  r.set<Prod>(gpu, reduce<ProdR, Prod, One>, "cuda");
  r.set<Max>(gpu, reduce<MaxR, Max, Lowest>, "cuda");
  r.set<Min>(gpu, reduce<MinR, Min, Highest>, "cuda");
}

}  // namespace tapeflow::cuda
