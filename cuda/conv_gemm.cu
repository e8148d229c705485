// The cuBLAS convolution paths: 1×1 convolutions as GEMMs on x where it
// lies, and im2col + one GEMM per group per chunk of images, whose input
// gradient gathers each dx element from the col buffer (no atomics). The
// calls come from core/conv_gemm_plan.hpp, whose lists CI runs through a
// naive GEMM on the host; this file issues them. float32 GEMMs follow
// config::float32_matmul_precision: highest multiplies in float32, high in
// TF32, medium in bfloat16, all summing in float32; float64 stays float64.
#include <algorithm>
#include <limits>
#include <type_traits>
#include <vector>

#include "check.hpp"
#include "context.hpp"
#include "conv.cuh"
#include "core/conv_gemm_plan.hpp"
#include "core/creation_internal.hpp"
#include "core/dtype_dispatch.hpp"
#include "cublas_compute.hpp"
#include "grid.cuh"
#include "ops/nn/conv_ops.hpp"
#include "tapeflow/config.hpp"

namespace tapeflow::cuda {
namespace {

/**
 * Rows along y (each block splits its row's channel and tap once), columns
 * along x: consecutive threads write consecutive entries.
 */
template <class T>
__global__ void im2col_kernel(Im2col m, ColumnSplit split, const T* x, T* col) {
  const int64_t rows = m.rows();
  const auto cols = static_cast<uint32_t>(m.cols());
  for (int64_t row = blockIdx.y; row < rows; row += gridDim.y) {
    const Im2colRow r = m.row(row);
    T* col_row = col + row * int64_t{cols};
    for (uint32_t j = blockIdx.x * blockDim.x + threadIdx.x; j < cols;
         j += gridDim.x * blockDim.x)
      im2col_entry(m, r, split, x, col_row, j);
  }
}

template <class T>
__global__ void col2im_kernel(Col2imGather m, InputSplit split, const T* col,
                              T* dx) {
  const int64_t n = m.elements();
  for (int64_t i = grid_first(); i < n; i += grid_step())
    col2im_entry(m, split, col, dx, static_cast<uint32_t>(i));
}

/** Out-channels along y, columns along x, as in im2col_kernel. */
template <class T>
__global__ void gather_dy_kernel(GroupOutput m, ColumnSplit split,
                                 uint32_t cols, const T* dy, T* gathered) {
  for (int64_t o = blockIdx.y; o < m.g.og; o += gridDim.y)
    for (uint32_t j = blockIdx.x * blockDim.x + threadIdx.x; j < cols;
         j += gridDim.x * blockDim.x)
      gather_dy_entry(m, split, dy, gathered + o * int64_t{cols}, o, j);
}

/** The device pointers of the buffers a call list names. */
template <class T>
struct Buffers {
  T* at[5] = {};
  void set(ConvBuffer b, const Tensor& t) {
    at[static_cast<int>(b)] = static_cast<T*>(t.raw_data());
  }
  T* operator()(const BlasOperand& o) const {
    return at[static_cast<int>(o.buffer)] + o.offset;
  }
};

/** One BlasGemm as one cuBLAS call on the device's stream. */
template <class T>
void issue(cublasHandle_t handle, const BlasGemm& call,
           const Buffers<T>& buffers) {
  constexpr bool f64 = std::is_same_v<T, double>;
  constexpr cudaDataType type = f64 ? CUDA_R_64F : CUDA_R_32F;
  const cublasComputeType_t compute =
      cublas_compute_type(f64 ? float64 : float32);
  const T alpha = 1, beta = call.accumulate ? 1 : 0;
  const auto op = [](const BlasOperand& o) {
    return o.transposed ? CUBLAS_OP_T : CUBLAS_OP_N;
  };
  const int m = int(call.m), n = int(call.n), k = int(call.k);
  if (call.batch == 1) {
    TAPEFLOW_CUDA_CHECK(cublasGemmEx(
        handle, op(call.a), op(call.b), m, n, k, &alpha, buffers(call.a), type,
        int(call.a.ld), buffers(call.b), type, int(call.b.ld), &beta,
        buffers(call.c), type, int(call.c.ld), compute, CUBLAS_GEMM_DEFAULT));
    return;
  }
  TAPEFLOW_CUDA_CHECK(cublasGemmStridedBatchedEx(
      handle, op(call.a), op(call.b), m, n, k, &alpha, buffers(call.a), type,
      int(call.a.ld), call.a.stride, buffers(call.b), type, int(call.b.ld),
      call.b.stride, &beta, buffers(call.c), type, int(call.c.ld),
      call.c.stride, int(call.batch), compute, CUBLAS_GEMM_DEFAULT));
}

/** Whether cuBLAS can run a call list: there is one, within int sizes. */
bool runnable(const std::vector<BlasGemm>& calls) {
  if (calls.empty()) return false;
  for (const BlasGemm& call : calls)
    if (!fits_blas(call)) return false;
  return true;
}

template <class T>
Buffers<T> operand_buffers(const ConvOperands& t) {
  Buffers<T> buffers;
  buffers.set(ConvBuffer::x, t.x);
  buffers.set(ConvBuffer::w, t.w);
  buffers.set(ConvBuffer::y, t.y);
  return buffers;
}

template <class T>
bool gemm_1x1(ConvPass pass, const ConvGeometry& g, const ConvOperands& t,
              int device) {
  const bool bias = t.bias.defined();
  // Every group's calls first: nothing runs unless all of them can.
  std::vector<std::vector<BlasGemm>> groups;
  for (int64_t group = 0; group < g.groups; ++group) {
    groups.push_back(
        pass == ConvPass::forward      ? gemm_1x1_forward(g, group, bias)
        : pass == ConvPass::grad_input ? gemm_1x1_grad_input(g, group)
                                       : gemm_1x1_grad_filter(g, group));
    if (!runnable(groups.back())) return false;
  }
  if (pass == ConvPass::forward && bias) conv_fill_bias(g, t);
  const Buffers<T> buffers = operand_buffers<T>(t);
  const cublasHandle_t handle = cublas(device);
  for (const auto& calls : groups)
    for (const BlasGemm& call : calls) issue(handle, call, buffers);
  return true;
}

/** The cuBLAS calls of one pass for one group and chunk. */
std::vector<BlasGemm> im2col_calls(ConvPass pass, const ConvGeometry& g,
                                   int64_t group, int64_t n0, int64_t images,
                                   bool bias) {
  switch (pass) {
    case ConvPass::forward:
      return im2col_forward(g, group, n0, images, bias);
    case ConvPass::grad_input:
      return im2col_grad_input(g, group, n0, images);
    case ConvPass::grad_filter:
      break;
  }
  return im2col_grad_filter(g, group, n0, images);
}

template <class T>
bool im2col(ConvPass pass, const ConvGeometry& g, const ConvOperands& t,
            int64_t chunk, int device) {
  const bool bias = t.bias.defined();
  // The kernels around the GEMMs split a chunk's columns (and col2im its dx
  // elements) in 31 bits (FastDivmod): the col budget keeps a chunk far
  // below that, and a chunk is cut to fit when it does not.
  const int64_t per_image = pass == ConvPass::grad_input
                                ? std::max(g.out_size(), g.cg * g.in_size())
                                : g.out_size();
  chunk = std::min(chunk, std::numeric_limits<int32_t>::max() /
                              std::max<int64_t>(1, per_image));
  // Every group and chunk has the first one's strides and at most its
  // sizes, so the first call list stands for all of them.
  const int64_t widest = std::min(chunk, g.n);
  if (widest < 1 || !runnable(im2col_calls(pass, g, 0, 0, widest, bias)))
    return false;
  const ColumnSplit split = column_split(g);
  const int64_t rows = g.cg * g.k_size(), positions = g.out_size();
  // Scratch from the device's arena, freed when this returns: the arena
  // hands it out again only to work the stream runs after these calls.
  const Tensor col = empty_tensor(Shape({rows * widest * positions}),
                                  t.y.dtype(), t.y.device(), Conv::name);
  const Tensor gathered =
      pass == ConvPass::grad_filter
          ? empty_tensor(Shape({g.og * widest * positions}), t.y.dtype(),
                         t.y.device(), Conv::name)
          : Tensor();
  if (pass == ConvPass::forward && bias) conv_fill_bias(g, t);
  Buffers<T> buffers = operand_buffers<T>(t);
  buffers.set(ConvBuffer::col, col);
  if (gathered.defined()) buffers.set(ConvBuffer::gathered_dy, gathered);
  const cublasHandle_t handle = cublas(device);
  const auto run_im2col = [&](const Im2col& m) {
    im2col_kernel<T>
        <<<rows_grid(m.rows(), m.cols()), kBlockThreads, 0, activate(device)>>>(
            m, split, conv_in<T>(t.x), conv_out<T>(col));
    TAPEFLOW_CUDA_CHECK(cudaGetLastError());
  };
  for (int64_t n0 = 0; n0 < g.n; n0 += chunk) {
    const int64_t images = std::min(chunk, g.n - n0);
    for (int64_t group = 0; group < g.groups; ++group) {
      if (pass != ConvPass::grad_input) run_im2col({g, group, n0, images});
      if (pass == ConvPass::grad_filter) {
        const GroupOutput dy{g, group, n0};
        const auto cols = static_cast<uint32_t>(images * positions);
        gather_dy_kernel<T>
            <<<rows_grid(g.og, cols), kBlockThreads, 0, activate(device)>>>(
                dy, split, cols, conv_in<T>(t.y), conv_out<T>(gathered));
        TAPEFLOW_CUDA_CHECK(cudaGetLastError());
      }
      for (const BlasGemm& call :
           im2col_calls(pass, g, group, n0, images, bias))
        issue(handle, call, buffers);
      if (pass == ConvPass::grad_input) {
        const Col2imGather m{g, group, n0, images};
        col2im_kernel<T>
            <<<blocks_for(m.elements()), kBlockThreads, 0, activate(device)>>>(
                m, input_split(g), conv_in<T>(col), conv_out<T>(t.x));
        TAPEFLOW_CUDA_CHECK(cudaGetLastError());
      }
    }
  }
  return true;
}

}  // namespace

bool conv_gemm_1x1(ConvPass pass, const ConvGeometry& g,
                   const ConvOperands& t) {
  const int device = t.y.device().index;
  return dispatch_floating(t.y.dtype(), Conv::name, [&](auto tag) {
    return gemm_1x1<decltype(tag)>(pass, g, t, device);
  });
}

bool conv_im2col(ConvPass pass, const ConvGeometry& g, const ConvOperands& t,
                 int64_t images_per_chunk) {
  const int device = t.y.device().index;
  return dispatch_floating(t.y.dtype(), Conv::name, [&](auto tag) {
    return im2col<decltype(tag)>(pass, g, t, images_per_chunk, device);
  });
}

}  // namespace tapeflow::cuda
