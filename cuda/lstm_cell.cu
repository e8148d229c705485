// The fused LSTM cell on the GPU (nn/lstm_cell_ops.hpp): one thread per
// element of the (rows, units) state, with core/lstm_cell_math.hpp's
// formulas (the CPU kernel's, in the same order) and the GPU's Sigmoid and
// Tanh kernels' functions. A step of the fused LSTM walk is one launch
// forward and one back instead of ~12 and ~20 small ops.
#include "check.hpp"
#include "context.hpp"
#include "core/creation_internal.hpp"
#include "core/dtype_dispatch.hpp"
#include "core/lstm_cell_math.hpp"
#include "functors.cuh"
#include "grid.cuh"
#include "nn/lstm_cell_ops.hpp"

namespace tapeflow::cuda {
namespace {

/** The seven outputs of lstm_cell_forward, (rows, units) each. */
template <class T>
struct ForwardOutputs {
  T *i, *f, *g, *o, *c_next, *tanh_c, *h;
};

/** z (rows, 4 units) and c (rows, units), dense. */
template <class T>
__global__ void cell_forward_kernel(int64_t n, int64_t units, const T* z,
                                    const T* c, ForwardOutputs<T> out) {
  for (int64_t e = grid_first(); e < n; e += grid_step()) {
    const int64_t r = e / units;
    const T* zr = z + e + 3 * r * units;  // row r's gate i, column e % units
    const auto v =
        lstm_cell_forward_values(zr[0], zr[units], zr[2 * units], zr[3 * units],
                                 c[e], SigmoidF{}, TanhF{});
    out.i[e] = v.i;
    out.f[e] = v.f;
    out.g[e] = v.g;
    out.o[e] = v.o;
    out.c_next[e] = v.c_next;
    out.tanh_c[e] = v.tanh_c;
    out.h[e] = v.h;
  }
}

/** The eight (rows, units) inputs of lstm_cell_backward, dense. */
template <class T>
struct BackwardInputs {
  const T *i, *f, *g, *o, *c, *tanh_c, *dh, *dc;
};

template <class T>
__global__ void cell_backward_kernel(int64_t n, int64_t units,
                                     BackwardInputs<T> in, T* dz, T* dc_prev) {
  for (int64_t e = grid_first(); e < n; e += grid_step()) {
    const int64_t r = e / units;
    const auto d =
        lstm_cell_backward_values(in.i[e], in.f[e], in.g[e], in.o[e], in.c[e],
                                  in.tanh_c[e], in.dh[e], in.dc[e]);
    T* dzr = dz + e + 3 * r * units;
    dzr[0] = d.dz_i;
    dzr[units] = d.dz_f;
    dzr[2 * units] = d.dz_g;
    dzr[3 * units] = d.dz_o;
    dc_prev[e] = d.dc_prev;
  }
}

void cell_forward(const LstmCellForward& op, Inputs in, const Outputs& out) {
  const Tensor z = materialize(in[0]), c = materialize(in[1]);
  const int64_t n = c.numel(), units = c.shape()[1];
  if (n == 0) return;
  dispatch_floating(c.dtype(), op.name, [&](auto tag) {
    using T = decltype(tag);
    const ForwardOutputs<T> o{
        out[0].data<T>(), out[1].data<T>(), out[2].data<T>(), out[3].data<T>(),
        out[4].data<T>(), out[5].data<T>(), out[6].data<T>()};
    cell_forward_kernel<T>
        <<<blocks_for(n), kBlockThreads, 0, activate(c.device().index)>>>(
            n, units, z.data<T>(), c.data<T>(), o);
    TAPEFLOW_CUDA_CHECK(cudaGetLastError());
  });
}

void cell_backward(const LstmCellBackward& op, Inputs in, const Outputs& out) {
  Tensor x[8];
  for (int k = 0; k < 8; ++k) x[k] = materialize(in[k]);
  const int64_t n = x[0].numel(), units = x[0].shape()[1];
  if (n == 0) return;
  dispatch_floating(x[0].dtype(), op.name, [&](auto tag) {
    using T = decltype(tag);
    const BackwardInputs<T> b{x[0].data<T>(), x[1].data<T>(), x[2].data<T>(),
                              x[3].data<T>(), x[4].data<T>(), x[5].data<T>(),
                              x[6].data<T>(), x[7].data<T>()};
    cell_backward_kernel<T>
        <<<blocks_for(n), kBlockThreads, 0, activate(x[0].device().index)>>>(
            n, units, b, out[0].data<T>(), out[1].data<T>());
    TAPEFLOW_CUDA_CHECK(cudaGetLastError());
  });
}

}  // namespace

void register_lstm_cell(Registry& r) {
  r.set<LstmCellForward>(DeviceType::cuda, cell_forward, "cuda");
  r.set<LstmCellBackward>(DeviceType::cuda, cell_backward, "cuda");
}

}  // namespace tapeflow::cuda
