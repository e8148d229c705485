// The fused LSTM cell on the CPU (nn/lstm_cell_ops.hpp): each element runs
// the op-by-op walk's ops in their order (core/lstm_cell_math.hpp) with the
// same functions (the Sigmoid kernel's sigmoid, the CPU's tanh), in one
// xsimd pass along each row, rows split across threads. The values are the
// op-by-op walk's within a few ulp: GCC fuses a product into the sum that
// follows it, and a row's tail takes the scalar functions where the ops' tails
// fall elsewhere. A step of the benchmark's LSTM (32 x 256 units) is one pass
// forward and one back instead of ~30 small ops, each with its own allocation
// and pass over memory.
#include <algorithm>

#include "core/creation_internal.hpp"
#include "core/dtype_dispatch.hpp"
#include "core/lstm_cell_math.hpp"
#include "cpu/batch_loop.hpp"
#include "cpu/functors.hpp"
#include "cpu/tanh_float.hpp"
#include "nn/lstm_cell_ops.hpp"

namespace tapeflow::cpu {
namespace {

/**
 * Calls step<batch>(r, k) and step<T>(r, k) over the columns k of each row r
 * of (rows, units) operands, rows split across threads; `step` captures by
 * value (see for_each_batch).
 */
template <class T, class Step>
void over_rows(int64_t rows, int64_t units, const Step& step) {
  constexpr int64_t W = xsimd::batch<T>::size;
  // A row moves 9 (forward) to 12 (backward) units' worth of elements.
  const int64_t grain = std::max<int64_t>(1, kParallelGrain / (8 * units));
  parallel_for(rows, grain, [&](int64_t r0, int64_t r1) {
    const Step local = step;
    for (int64_t r = r0; r < r1; ++r) {
      int64_t k = 0;
      for (; k + W <= units; k += W)
        local.template operator()<xsimd::batch<T>>(r, k);
      for (; k < units; ++k) local.template operator()<T>(r, k);
    }
  });
}

void cell_forward(const LstmCellForward& op, Inputs in, const Outputs& out) {
  const Tensor z = materialize(in[0]), c = materialize(in[1]);
  const int64_t rows = c.shape()[0], units = c.shape()[1];
  dispatch_floating(c.dtype(), op.name, [&](auto tag) {
    using T = decltype(tag);
    const T *zp = z.data<T>(), *cp = c.data<T>();
    T *ip = out[0].data<T>(), *fp = out[1].data<T>(), *gp = out[2].data<T>(),
      *op_ = out[3].data<T>(), *cn = out[4].data<T>(), *tc = out[5].data<T>(),
      *hp = out[6].data<T>();
    over_rows<T>(rows, units, [=]<class V>(int64_t r, int64_t k) {
      const T* zr = zp + r * 4 * units + k;
      const int64_t at = r * units + k;
      const auto v = lstm_cell_forward_values(
          load_at<V>(zr), load_at<V>(zr + units), load_at<V>(zr + 2 * units),
          load_at<V>(zr + 3 * units), load_at<V>(cp + at),
          [](const V& x) { return cpu_sigmoid(x); },
          [](const V& x) { return cpu_tanh(x); });
      store_at(ip + at, v.i);
      store_at(fp + at, v.f);
      store_at(gp + at, v.g);
      store_at(op_ + at, v.o);
      store_at(cn + at, v.c_next);
      store_at(tc + at, v.tanh_c);
      store_at(hp + at, v.h);
    });
  });
}

void cell_backward(const LstmCellBackward& op, Inputs in, const Outputs& out) {
  Tensor x[8];
  for (int k = 0; k < 8; ++k) x[k] = materialize(in[k]);
  const int64_t rows = x[0].shape()[0], units = x[0].shape()[1];
  dispatch_floating(x[0].dtype(), op.name, [&](auto tag) {
    using T = decltype(tag);
    const T *ip = x[0].data<T>(), *fp = x[1].data<T>(), *gp = x[2].data<T>(),
            *op_ = x[3].data<T>(), *cp = x[4].data<T>(), *tc = x[5].data<T>(),
            *dhp = x[6].data<T>(), *dcp = x[7].data<T>();
    T *dz = out[0].data<T>(), *dc_prev = out[1].data<T>();
    over_rows<T>(rows, units, [=]<class V>(int64_t r, int64_t k) {
      const int64_t at = r * units + k;
      const auto d = lstm_cell_backward_values(
          load_at<V>(ip + at), load_at<V>(fp + at), load_at<V>(gp + at),
          load_at<V>(op_ + at), load_at<V>(cp + at), load_at<V>(tc + at),
          load_at<V>(dhp + at), load_at<V>(dcp + at));
      T* dzr = dz + r * 4 * units + k;
      store_at(dzr, d.dz_i);
      store_at(dzr + units, d.dz_f);
      store_at(dzr + 2 * units, d.dz_g);
      store_at(dzr + 3 * units, d.dz_o);
      store_at(dc_prev + at, d.dc_prev);
    });
  });
}

}  // namespace

void register_lstm_cell(Registry& r) {
  r.set<LstmCellForward>(DeviceType::cpu, cell_forward, "xsimd");
  r.set<LstmCellBackward>(DeviceType::cpu, cell_backward, "xsimd");
}

}  // namespace tapeflow::cpu
