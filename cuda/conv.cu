// Convolutions on the GPU. Each of the four ops builds its pass's geometry
// from the attributes and the operands' shapes and strides (an NHWC tensor
// is a channels-first view read where it lies), asks choose_conv_algo
// (core/conv_plan.hpp) for one of four paths and runs it (conv.cuh). The
// passes with nothing to sum zero-fill their output, as the CPU's do.
// ConvRelu rectifies y in place after its forward pass (one vectorized sweep:
// the four paths write y in different orders and layouts).
#include <limits>
#include <string>

#include "check.hpp"
#include "context.hpp"
#include "conv.cuh"
#include "core/conv_gemm_plan.hpp"
#include "core/conv_plan.hpp"
#include "core/creation_internal.hpp"
#include "core/dtype_dispatch.hpp"
#include "core/registry.hpp"
#include "elementwise.cuh"
#include "functors.cuh"
#include "grid.cuh"
#include "tapeflow/memory.hpp"

namespace tapeflow::cuda {
namespace {

/** y's (image, out-channel) planes along y, their positions along x. */
template <class T>
__global__ void bias_fill_kernel(ConvGeometry g, ColumnSplit split,
                                 const T* bias, int64_t bias_stride, T* y) {
  const int64_t planes = g.n * g.o;
  const auto positions = static_cast<uint32_t>(g.out_size());
  for (int64_t plane = blockIdx.y; plane < planes; plane += gridDim.y)
    for (uint32_t p = blockIdx.x * blockDim.x + threadIdx.x; p < positions;
         p += gridDim.x * blockDim.x)
      bias_fill_entry(g, split, bias, bias_stride, y, plane, p);
}

ConvGeometry geometry(const ConvAttrs& a, const ConvOperands& t) {
  return conv_geometry(a, t.x.shape(), t.w.shape(), t.y.shape(), t.x.strides(),
                       t.w.strides(), t.y.strides());
}

/** The pass's inputs as dense channels-first copies, its output as is. */
ConvOperands dense_inputs(ConvPass pass, ConvOperands t) {
  if (pass != ConvPass::grad_input) t.x = materialize(t.x);
  if (pass != ConvPass::grad_filter) t.w = materialize(t.w);
  if (pass != ConvPass::forward) t.y = materialize(t.y);
  return t;
}

void run_pass(ConvPass pass, const ConvAttrs& a, const ConvOperands& t) {
  const ConvGeometry g = geometry(a, t);
  const int64_t limit =
      static_cast<int64_t>(memory_stats(t.y.device()).limit_bytes);
  const ConvChoice choice =
      choose_conv_algo(g, itemsize(t.y.dtype()), ConvDeviceFacts{}, limit);
  switch (choice.algo) {
    case ConvAlgo::depthwise_direct:
      return conv_depthwise(pass, g, t);
    case ConvAlgo::implicit_gemm:
      return conv_implicit(pass, g, t, limit);
    case ConvAlgo::gemm_1x1:
    case ConvAlgo::im2col_gemm:
      break;
  }
  const auto run_gemm = [&](const ConvGeometry& gg, const ConvOperands& tt) {
    return choice.algo == ConvAlgo::gemm_1x1
               ? conv_gemm_1x1(pass, gg, tt)
               : conv_im2col(pass, gg, tt, choice.images_per_chunk);
  };
  if (run_gemm(g, t)) return;
  // cuBLAS reads each operand as a matrix: a channels-last filter larger
  // than 1×1 (its in-channel and tap axes do not walk as one) or an
  // otherwise strided input is copied channels-first first.
  const ConvOperands dense = dense_inputs(pass, t);
  const ConvGeometry dense_g = geometry(a, dense);
  if (run_gemm(dense_g, dense)) return;
  // Sizes past cuBLAS's int arguments: the implicit GEMM indexes in int64.
  conv_implicit(pass, dense_g, dense, limit);
}

/** False (after zero-filling `out`) when there is nothing to sum. */
bool has_work(Inputs in, Tensor& out) {
  if (out.numel() == 0) return false;
  if (in[0].numel() != 0 && in[1].numel() != 0) return true;
  TAPEFLOW_CUDA_CHECK(cudaMemsetAsync(out.raw_data(), 0,
                                      out.numel() * itemsize(out.dtype()),
                                      activate(out.device().index)));
  return false;
}

// The oneDNN kernels' payloads (converted operands) have no GPU
// counterpart: these kernels leave none and ignore the ones they are given.

void conv(const Conv& op, Inputs in, const Outputs& outs) {
  Tensor& y = outs[0];
  const ConvOperands t{in[0], in[1], y, in.size() == 3 ? in[2] : Tensor()};
  if (has_work(in, y))
    run_pass(ConvPass::forward, op.attrs, t);
  else if (t.bias.defined() && y.numel() != 0)
    conv_fill_bias(geometry(op.attrs, t), t);
}

/**
 * y = relu(y), NaN kept (the Relu kernel's rule): one 128-bit load and
 * store per vector where y is aligned, else element by element.
 */
template <class T>
struct ReluInPlaceBody {
  static constexpr int kWidth = vector_width(sizeof(T));
  T* y;
  __device__ void operator()(const int64_t* off) const {
    y[off[0]] = ReluF{}(y[off[0]]);
  }
  __device__ void vector(const int64_t* off, uint32_t) const {
    Pack<T, kWidth> v = load_pack<kWidth>(y, off[0], false);
#pragma unroll
    for (int j = 0; j < kWidth; ++j) v.v[j] = ReluF{}(v.v[j]);
    store_pack<kWidth>(y, off[0], v);
  }
  std::array<OperandAddress, 1> addresses() const {
    return {{{y, sizeof(T)}}};
  }
};

void conv_relu(const ConvRelu& op, Inputs in, const Outputs& outs) {
  conv(Conv{op.attrs}, in, outs);
  Tensor& y = outs[0];
  dispatch_floating(y.dtype(), ConvRelu::name, [&](auto tag) {
    using T = decltype(tag);
    launch_elementwise<1>(y, {},
                          ReluInPlaceBody<T>{static_cast<T*>(y.raw_data())});
  });
}

void conv_grad_input(const ConvGradInput& op, Inputs in, const Outputs& outs) {
  Tensor& dx = outs[0];
  if (!has_work(in, dx)) return;
  run_pass(ConvPass::grad_input, op.attrs, {dx, in[1], in[0], Tensor()});
}

void conv_grad_filter(const ConvGradFilter& op, Inputs in,
                      const Outputs& outs) {
  Tensor& dw = outs[0];
  if (!has_work(in, dw)) return;
  run_pass(ConvPass::grad_filter, op.attrs, {in[0], dw, in[1], Tensor()});
}

}  // namespace

void conv_fill_bias(const ConvGeometry& g, const ConvOperands& t) {
  if (g.n * g.o * g.out_size() == 0) return;
  // FastDivmod splits positions below 2³¹: 8 GiB per float32 plane.
  if (g.out_size() > std::numeric_limits<int32_t>::max())
    throw DeviceError(
        "[conv] expected at most 2^31 - 1 output positions per "
        "image on a GPU, got " +
        std::to_string(g.out_size()));
  const int device = t.y.device().index;
  dispatch_floating(t.y.dtype(), Conv::name, [&](auto tag) {
    using T = decltype(tag);
    bias_fill_kernel<T>
        <<<rows_grid(g.n * g.o, g.out_size()), kBlockThreads, 0,
           activate(device)>>>(g, column_split(g), conv_in<T>(t.bias),
                               t.bias.strides()[0], conv_out<T>(t.y));
    TAPEFLOW_CUDA_CHECK(cudaGetLastError());
  });
}

void register_conv(Registry& r) {
  constexpr auto gpu = DeviceType::cuda;
  r.set<Conv>(gpu, conv, "cuda");
  r.set<ConvRelu>(gpu, conv_relu, "cuda");
  r.set<ConvGradInput>(gpu, conv_grad_input, "cuda");
  r.set<ConvGradFilter>(gpu, conv_grad_filter, "cuda");
}

}  // namespace tapeflow::cuda
