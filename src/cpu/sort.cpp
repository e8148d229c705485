// argsort on the CPU: a stable sort of each line's positions by
// core/sort_order.hpp's order (the CUDA kernel's too), lines split over the
// threads.
#include <algorithm>
#include <numeric>
#include <vector>

#include "core/dtype_dispatch.hpp"
#include "core/registry.hpp"
#include "core/sort_order.hpp"
#include "cpu/axis_lines.hpp"
#include "ops/reduce_ops.hpp"

namespace tapeflow::cpu {
namespace {

template <class T>
struct LineBuffers {
  std::vector<T> keys;
  std::vector<int64_t> order;
};

void argsort(const ArgSort& op, Inputs in, const Outputs& outs) {
  dispatch_all(in[0].dtype(), ArgSort::name, [&](auto tag) {
    using T = decltype(tag);
    const T* src = static_cast<const T*>(in[0].raw_data());
    int64_t* dst = static_cast<int64_t*>(outs[0].raw_data());
    for_each_line(in[0], outs[0], op.axis, [&](const AxisLine& l) {
      // Lines up to 2^16 entries reuse their thread's buffers (1 MiB at
      // most stays held); a longer line's buffers go with it.
      thread_local LineBuffers<T> reused;
      LineBuffers<T> own;
      LineBuffers<T>& buffers = l.n <= (int64_t{1} << 16) ? reused : own;
      std::vector<T>& keys = buffers.keys;
      std::vector<int64_t>& order = buffers.order;
      keys.resize(l.n);
      order.resize(l.n);
      for (int64_t j = 0; j < l.n; ++j) keys[j] = src[l.x_at + j * l.x_step];
      std::iota(order.begin(), order.end(), int64_t{0});
      std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
        return sorts_before(keys[a], keys[b], op.descending);
      });
      for (int64_t j = 0; j < l.n; ++j)
        dst[l.out_at + j * l.out_step] = order[j];
    });
  });
}

}  // namespace

void register_sort(Registry& r) {
  r.set<ArgSort>(DeviceType::cpu, argsort, "cpu");
}

}  // namespace tapeflow::cpu
