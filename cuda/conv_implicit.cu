// The implicit-GEMM convolution: one SIMT template (64×64×8 tiles, 256
// threads of 4×4 outputs, shared-memory staging) over CUTLASS's fprop,
// dgrad and wgrad mappings (core/conv_index.hpp). The block body is
// core/conv_tile.hpp's, which CI runs block by block on the host against
// the CPU's direct kernels. wgrad splits its long K (N·P) into slices with
// their own workspace, and a second pass adds them in order: deterministic,
// no atomics.
#include <algorithm>
#include <string>

#include "check.hpp"
#include "context.hpp"
#include "conv.cuh"
#include "core/conv_plan.hpp"
#include "core/conv_tile.hpp"
#include "core/creation_internal.hpp"
#include "core/dtype_dispatch.hpp"
#include "grid.cuh"

namespace tapeflow::cuda {
namespace {

// CUDA's limits on a grid's extents.
constexpr int64_t kMaxGridX = 2147483647, kMaxGridYZ = 65535;

/**
 * Block (x, y, z) computes tile (x, y) of group group0 + z / splits over
 * K slice z % splits.
 */
template <class Gemm, class T>
__global__ void __launch_bounds__(ImplicitTile::kThreads)
    implicit_gemm_kernel(ConvGeometry g, int64_t group0, const T* a, const T* b,
                         ImplicitOutput<T> out) {
  __shared__ ImplicitSmem<T> smem;
  DeviceBlock<ImplicitAccum<T>> block;
  const int64_t z = blockIdx.z;
  implicit_gemm_block(Gemm{g, group0 + z / out.splits}, a, b, out, blockIdx.x,
                      blockIdx.y, z % out.splits, smem, block);
}

/** Split-K's second pass: one thread per output of every group. */
template <class Gemm, class T>
__global__ void sum_slices_kernel(ConvGeometry g, ImplicitOutput<T> out) {
  const Gemm first{g, 0};
  const int64_t per_group = first.m() * first.n(), n = g.groups * per_group;
  for (int64_t i = grid_first(); i < n; i += grid_step())
    implicit_sum_slices(Gemm{g, i / per_group}, out, i % per_group);
}

/** Every block of `gemm` for every group, then the slices' sum. */
template <class Gemm, class T>
void launch(const ConvGeometry& g, const T* a, const T* b,
            const ImplicitOutput<T>& out, int device) {
  const ImplicitGrid grid = implicit_grid(Gemm{g, 0}, out.splits);
  if (grid.tiles_n > kMaxGridYZ || grid.tiles_m > kMaxGridX)
    throw DeviceError("[conv] expected an implicit GEMM of at most " +
                      std::to_string(kMaxGridX * ImplicitTile::kM) + " × " +
                      std::to_string(kMaxGridYZ * ImplicitTile::kN) + ", got " +
                      std::to_string(Gemm{g, 0}.m()) + " × " +
                      std::to_string(Gemm{g, 0}.n()));
  // Groups times splits along z, in launches of at most 65535.
  const int64_t groups_per_launch =
      std::max<int64_t>(1, kMaxGridYZ / out.splits);
  for (int64_t group0 = 0; group0 < g.groups; group0 += groups_per_launch) {
    const int64_t groups = std::min(groups_per_launch, g.groups - group0);
    const dim3 blocks(static_cast<unsigned>(grid.tiles_m),
                      static_cast<unsigned>(grid.tiles_n),
                      static_cast<unsigned>(groups * out.splits));
    implicit_gemm_kernel<Gemm, T>
        <<<blocks, ImplicitTile::kThreads, 0, activate(device)>>>(g, group0, a,
                                                                  b, out);
    TAPEFLOW_CUDA_CHECK(cudaGetLastError());
  }
  if (out.splits == 1) return;
  const Gemm first{g, 0};
  const int64_t n = g.groups * first.m() * first.n();
  sum_slices_kernel<Gemm, T>
      <<<blocks_for(n), kBlockThreads, 0, activate(device)>>>(g, out);
  TAPEFLOW_CUDA_CHECK(cudaGetLastError());
}

template <class T>
void forward(const ConvGeometry& g, const ConvOperands& t, int device) {
  ImplicitOutput<T> out;
  out.c = conv_out<T>(t.y);
  if (t.bias.defined()) {
    out.bias = conv_in<T>(t.bias);
    out.bias_stride = t.bias.strides()[0];
  }
  launch<FpropGemm>(g, conv_in<T>(t.x), conv_in<T>(t.w), out, device);
}

template <class T>
void grad_input(const ConvGeometry& g, const ConvOperands& t, int device) {
  ImplicitOutput<T> out;
  out.c = conv_out<T>(t.x);
  launch<DgradGemm>(g, conv_in<T>(t.y), conv_in<T>(t.w), out, device);
}

template <class T>
void grad_filter(const ConvGeometry& g, const ConvOperands& t, int device,
                 int64_t memory_limit_bytes) {
  const WgradGemm gemm{g, 0};
  const ImplicitGrid grid = implicit_grid(gemm, 1);
  const int64_t outputs = g.groups * gemm.m() * gemm.n();
  ImplicitOutput<T> out;
  out.c = conv_out<T>(t.w);
  out.splits = implicit_wgrad_splits(grid.tiles_m * grid.tiles_n * g.groups,
                                     gemm.k(), outputs * int64_t(sizeof(T)),
                                     conv_col_budget_bytes(memory_limit_bytes));
  // The slices' workspace from the device's arena, freed once the kernels
  // that use it are queued: the arena hands it out again only to work the
  // stream runs after them.
  Tensor slices;
  if (out.splits > 1) {
    slices = empty_tensor(Shape({outputs * out.splits}), t.w.dtype(),
                          t.w.device(), "conv_grad_filter");
    out.slices = conv_out<T>(slices);
  }
  launch<WgradGemm>(g, conv_in<T>(t.y), conv_in<T>(t.x), out, device);
}

}  // namespace

void conv_implicit(ConvPass pass, const ConvGeometry& g, const ConvOperands& t,
                   int64_t memory_limit_bytes) {
  const int device = t.y.device().index;
  dispatch_floating(t.y.dtype(), "conv", [&](auto tag) {
    using T = decltype(tag);
    switch (pass) {
      case ConvPass::forward:
        return forward<T>(g, t, device);
      case ConvPass::grad_input:
        return grad_input<T>(g, t, device);
      case ConvPass::grad_filter:
        return grad_filter<T>(g, t, device, memory_limit_bytes);
    }
  });
}

}  // namespace tapeflow::cuda
