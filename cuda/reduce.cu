// Reductions: one block per output element; threads stride over the reduced
// elements and combine through shared memory.
#include <limits>

#include "check.hpp"
#include "core/dtype_dispatch.hpp"
#include "ops/reduce_ops.hpp"

namespace tapeflow::cuda {
namespace {

constexpr int kThreads = 256;

struct Block {
  int rank = 0;
  int64_t shape[kMaxRank];
  int64_t strides[kMaxRank];
  __device__ int64_t offset(int64_t i) const {
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
struct MaxR {
  template <class T>
  __device__ T operator()(T a, T b) const {
    return b > a ? b : a;
  }
};
struct MinR {
  template <class T>
  __device__ T operator()(T a, T b) const {
    return b < a ? b : a;
  }
};

template <class T, class R>
__global__ void reduce_kernel(Block kept, Block reduced, int64_t K, int64_t N,
                              T identity, const T* in, T* out, R combine) {
  __shared__ T partial[kThreads];
  for (int64_t k = blockIdx.x; k < K; k += gridDim.x) {
    const int64_t base = kept.offset(k);
    T acc = identity;
    for (int64_t r = threadIdx.x; r < N; r += blockDim.x)
      acc = combine(acc, in[base + reduced.offset(r)]);
    partial[threadIdx.x] = acc;
    __syncthreads();
    for (int half = blockDim.x / 2; half > 0; half /= 2) {
      if (threadIdx.x < half)
        partial[threadIdx.x] =
            combine(partial[threadIdx.x], partial[threadIdx.x + half]);
      __syncthreads();
    }
    if (threadIdx.x == 0) out[k] = partial[0];
    __syncthreads();
  }
}

template <class T, class R>
void run(const ReduceOp& op, const Tensor& x, Tensor& out, T identity) {
  Block kept, reduced;
  for (int64_t i = 0; i < x.rank(); ++i) {
    Block& b = op.reduces(i) ? reduced : kept;
    b.shape[b.rank] = x.shape()[i];
    b.strides[b.rank] = x.strides()[i];
    ++b.rank;
  }
  const int64_t K = out.numel(), N = K ? x.numel() / K : 0;
  if (K == 0) return;
  TAPEFLOW_CUDA_CHECK(cudaSetDevice(x.device().index));
  const int blocks = static_cast<int>(std::min<int64_t>(K, 65535));
  reduce_kernel<T, R><<<blocks, kThreads>>>(
      kept, reduced, K, N, identity, static_cast<const T*>(x.raw_data()),
      static_cast<T*>(out.raw_data()), R{});
  TAPEFLOW_CUDA_CHECK(cudaGetLastError());
}

template <class R, class Op, class Identity>
void reduce(const Op& op, Inputs in, Tensor& out) {
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
struct Lowest {
  template <class T>
  T operator()() const {
    return std::numeric_limits<T>::lowest();
  }
};
struct Highest {
  template <class T>
  T operator()() const {
    return std::numeric_limits<T>::max();
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
