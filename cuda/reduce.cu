// Reductions: blocks of threads stride over the reduced elements of one
// output, 16 bytes at a time where they are dense, and combine through warp
// shuffles and CUB's BlockReduce. Few outputs over many elements (a full
// sum) split each output's range across blocks, then reduce the partial
// results in a second pass, so the whole GPU takes part. Adjacent outputs
// over strided elements (a column sum) go by columns instead: a warp reads
// 32 adjacent outputs' elements of a row. The split depends on the shape
// alone, so results are the same bits on every run.
#include <algorithm>
#include <cub/block/block_reduce.cuh>
#include <limits>

#include "check.hpp"
#include "context.hpp"
#include "core/creation_internal.hpp"
#include "core/dtype_dispatch.hpp"
#include "core/reduce_block.hpp"
#include "core/vector_split.hpp"
#include "elementwise.cuh"  // Pack
#include "ops/reduce_ops.hpp"

namespace tapeflow::cuda {
namespace {

constexpr int kThreads = 256;

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
/** count_nonzero: `fold` takes in an element of any type, () adds counts. */
struct CountR {
  __device__ int64_t operator()(int64_t a, int64_t b) const { return a + b; }
  template <class In>
  __device__ int64_t fold(int64_t acc, In x) const {
    return acc + (x != In(0));  // NaN counts, -0 does not
  }
};
/** R's merge of results as its fold too: a second pass over partials. */
template <class R>
struct Partials {
  template <class T>
  __device__ T operator()(T a, T b) const {
    return R{}(a, b);
  }
};

/** acc with element x taken in: R's fold where it has one, else R itself. */
template <class T, class In, class R>
__device__ T fold(const R& combine, T acc, In x) {
  if constexpr (requires { combine.fold(acc, x); })
    return combine.fold(acc, x);
  else
    return combine(acc, x);
}

/**
 * Block (k, p) reduces the elements of output k in
 * [p * chunk, min((p + 1) * chunk, N)) (core/vector_split.hpp) and writes
 * out[k * gridDim.y + p], in R's result type T (int64 counts of any input
 * type In; else In). Thread t folds the W-element vectors t, t + 256,
 * ... of its part in order, by 16-byte loads where the part is dense and
 * aligned (kReduceGroup of them issued before the first is folded), else
 * element by element (same elements, same order, same bits). The block then
 * combines its threads' values with warp shuffles and CUB's BlockReduce (a
 * fixed tree over lanes, then over warps): deterministic.
 */
template <class In, class T, class R>
__global__ void __launch_bounds__(kThreads)
    reduce_kernel(ReduceBlock kept, ReduceBlock reduced, int64_t K, int64_t N,
                  int64_t chunk, T identity, const In* in, T* out, R combine) {
  constexpr int W = vector_width(sizeof(In));
  using BlockReduce =
      cub::BlockReduce<T, kThreads, cub::BLOCK_REDUCE_WARP_REDUCTIONS>;
  __shared__ typename BlockReduce::TempStorage scratch;
  const int64_t part = blockIdx.y;
  const int64_t begin = reduce_vector_begin(part, chunk, 0, W);
  const int64_t end = begin + chunk < N ? begin + chunk : N;
  const int64_t vectors = (end - begin + W - 1) / W;
  const bool dense = reduced.dense && reduced.unit == 1;
  for (int64_t k = blockIdx.x; k < K; k += gridDim.x) {
    const In* base = in + kept.offset(k);
    const bool packed =
        dense && vector_aligned(reinterpret_cast<uintptr_t>(base + begin),
                                sizeof(In), W);
    T acc = identity;
    int64_t v = threadIdx.x;
    if (packed) {
      const int64_t group_end =
          reduce_group_end(v, (end - begin) / W, kThreads, kReduceGroup);
      for (; v < group_end; v += kReduceGroup * kThreads) {
        Pack<In, W> x[kReduceGroup];
#pragma unroll
        for (int g = 0; g < kReduceGroup; ++g)
          x[g] = *reinterpret_cast<const Pack<In, W>*>(
              base + reduce_vector_begin(part, chunk, v + g * kThreads, W));
#pragma unroll
        for (int g = 0; g < kReduceGroup; ++g)
#pragma unroll
          for (int j = 0; j < W; ++j) acc = fold(combine, acc, x[g].v[j]);
      }
    }
    for (; v < vectors; v += kThreads) {
      const int64_t first = reduce_vector_begin(part, chunk, v, W);
      if (packed && first + W <= end) {
        const Pack<In, W> x =
            *reinterpret_cast<const Pack<In, W>*>(base + first);
#pragma unroll
        for (int j = 0; j < W; ++j) acc = fold(combine, acc, x.v[j]);
      } else {
        const int64_t last = first + W < end ? first + W : end;
        for (int64_t r = first; r < last; ++r)
          acc = fold(combine, acc, base[reduced.offset(r)]);
      }
    }
    const T total = BlockReduce(scratch).Reduce(acc, combine);
    if (threadIdx.x == 0) out[k * gridDim.y + blockIdx.y] = total;
    __syncthreads();  // scratch is reused by the next output
  }
}

// The column kernel's block (core/vector_split.hpp).
constexpr int kColumns = kColumnReduceWidth,
              kColumnThreads = kColumnReduceThreads,
              kColumnGroup = kColumnReduceGroup;

/**
 * Outputs whose elements are x[k + r * unit] over rows r, adjacent in k (a
 * column sum): the row-wise kernel would read one element per row and
 * thread, 32 rows per warp. Thread (tx, ty) of block (c, p) folds column
 * k = c * 32 + tx over the rows ty, ty + 8, ... of part p
 * (core/vector_split.hpp's column_partition), in order; the block folds its
 * 8 values per column in order of ty and writes out[p * K + k]: the final
 * outputs where there is one part, else a parts x K matrix that this kernel
 * reduces again. Deterministic: the split depends on the shape alone, and
 * the choice of this kernel on the strides too (by_columns), so a column sum
 * of a transposed view and of its contiguous copy may differ in the last
 * bits, each the same from run to run.
 */
template <class In, class T, class R>
__global__ void __launch_bounds__(kColumns* kColumnThreads)
    column_reduce_kernel(int64_t K, int64_t N, int64_t unit, int64_t chunk,
                         T identity, const In* in, T* out, R combine) {
  __shared__ T folded[kColumnThreads][kColumns];
  const int tx = int(threadIdx.x), ty = int(threadIdx.y);
  const int64_t k = int64_t(blockIdx.x) * kColumns + tx;
  const int64_t begin = int64_t(blockIdx.y) * chunk;
  const int64_t rows = (begin + chunk < N ? begin + chunk : N) - begin;
  T acc = identity;
  if (k < K) {
    const In* column = in + k + begin * unit;
    int64_t v = ty;
    const int64_t group_end =
        reduce_group_end(v, rows, kColumnThreads, kColumnGroup);
    for (; v < group_end; v += kColumnGroup * kColumnThreads) {
      In x[kColumnGroup];
#pragma unroll
      for (int g = 0; g < kColumnGroup; ++g)
        x[g] = column[(v + g * kColumnThreads) * unit];
#pragma unroll
      for (int g = 0; g < kColumnGroup; ++g) acc = fold(combine, acc, x[g]);
    }
    for (; v < rows; v += kColumnThreads)
      acc = fold(combine, acc, column[v * unit]);
  }
  folded[ty][tx] = acc;
  __syncthreads();
  if (ty == 0 && k < K) {
    T total = folded[0][tx];
#pragma unroll
    for (int i = 1; i < kColumnThreads; ++i)
      total = combine(total, folded[i][tx]);
    out[int64_t(blockIdx.y) * K + k] = total;
  }
}

/**
 * Whether the column kernel takes this reduction: its outputs are adjacent
 * (k at offset k), enough of them to fill a warp, and its reduced elements
 * lie at multiples of one stride other than 1 (the row-wise kernel reads a
 * contiguous row in 16-byte vectors).
 */
bool by_columns(const ReduceBlock& kept, const ReduceBlock& reduced,
                int64_t K) {
  return K >= kColumns && kept.dense && kept.unit == 1 && reduced.dense &&
         reduced.unit != 1;
}

/** out[k] = the fold of in[k + r * unit] over r < N, for k < K. */
template <class In, class T, class R>
void reduce_columns(cudaStream_t stream, int64_t K, int64_t N, int64_t unit,
                    T identity, const In* in, Tensor& out) {
  const ReducePartition split =
      column_partition(K, N, kColumns, kColumnThreads * kColumnGroup);
  const dim3 block(kColumns, kColumnThreads);
  const auto grid = [&](int64_t parts) {
    return dim3(static_cast<unsigned>((K + kColumns - 1) / kColumns),
                static_cast<unsigned>(parts));
  };
  if (split.parts == 1) {
    column_reduce_kernel<In, T, R>
        <<<grid(1), block, 0, stream>>>(K, N, unit, split.chunk, identity, in,
                                        static_cast<T*>(out.raw_data()), R{});
    TAPEFLOW_CUDA_CHECK(cudaGetLastError());
    return;
  }
  // The partials' rows are the parts: a second column reduction, of
  // split.parts rows (at most 1024), in one part.
  Tensor partial = empty_tensor({split.parts, K}, out.dtype(), out.device());
  T* rows = static_cast<T*>(partial.raw_data());
  column_reduce_kernel<In, T, R><<<grid(split.parts), block, 0, stream>>>(
      K, N, unit, split.chunk, identity, in, rows, R{});
  TAPEFLOW_CUDA_CHECK(cudaGetLastError());
  column_reduce_kernel<T, T, Partials<R>><<<grid(1), block, 0, stream>>>(
      K, split.parts, K, split.parts, identity, rows,
      static_cast<T*>(out.raw_data()), Partials<R>{});
  TAPEFLOW_CUDA_CHECK(cudaGetLastError());
}

template <class In, class T, class R>
void launch(cudaStream_t stream, const ReduceBlock& kept,
            const ReduceBlock& reduced, int64_t K, int64_t N,
            ReducePartition split, T identity, const In* in, T* out) {
  const dim3 grid(static_cast<unsigned>(std::min<int64_t>(K, 65535)),
                  static_cast<unsigned>(split.parts));
  reduce_kernel<In, T, R><<<grid, kThreads, 0, stream>>>(
      kept, reduced, K, N, split.chunk, identity, in, out, R{});
  TAPEFLOW_CUDA_CHECK(cudaGetLastError());
}

/** Reduces x (element type In) into out (R's result type T). */
template <class In, class T, class R>
void run(const ReduceOp& op, const Tensor& x, Tensor& out, T identity) {
  ReduceBlock kept, reduced;
  for (int64_t i = 0; i < x.rank(); ++i)
    (op.reduces(i) ? reduced : kept).add(x.shape()[i], x.strides()[i]);
  const int64_t K = out.numel(), N = K ? x.numel() / K : 0;
  if (K == 0) return;
  const cudaStream_t stream = activate(x.device().index);
  const In* in = static_cast<const In*>(x.raw_data());
  T* o = static_cast<T*>(out.raw_data());
  if (by_columns(kept, reduced, K)) {
    reduce_columns<In, T, R>(stream, K, N, reduced.unit, identity, in, out);
    return;
  }
  constexpr int W = vector_width(sizeof(In));
  const ReducePartition split = reduce_partition(K, N, W, kThreads);
  if (split.parts == 1) {
    launch<In, T, R>(stream, kept, reduced, K, N, split, identity, in, o);
    return;
  }
  Tensor partial = empty_tensor({K, split.parts}, out.dtype(), out.device());
  launch<In, T, R>(stream, kept, reduced, K, N, split, identity, in,
                   static_cast<T*>(partial.raw_data()));
  ReduceBlock rows, cols;
  rows.add(K, split.parts);
  cols.add(split.parts, 1);
  launch<T, T, Partials<R>>(stream, rows, cols, K, split.parts,
                            ReducePartition{1, split.parts}, identity,
                            static_cast<const T*>(partial.raw_data()), o);
}

template <class R, class Op, class Identity>
void reduce(const Op& op, Inputs in, const Outputs& outs) {
  Tensor& out = outs[0];
  dispatch_numeric(in[0].dtype(), Op::name, [&](auto tag) {
    using T = decltype(tag);
    run<T, T, R>(op, in[0], out, Identity{}.template operator()<T>());
  });
}

void count_nonzero(const CountNonzero& op, Inputs in, const Outputs& outs) {
  dispatch_all(in[0].dtype(), CountNonzero::name, [&](auto tag) {
    run<decltype(tag), int64_t, CountR>(op, in[0], outs[0], int64_t{0});
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
  r.set<CountNonzero>(gpu, count_nonzero, "cuda");
}

}  // namespace tapeflow::cuda
