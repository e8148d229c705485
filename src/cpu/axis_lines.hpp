#pragma once
// The lines along one axis of the kernels that walk them whole (cumsum,
// argsort): each line's start in the input and in the output, lines split
// over the threads.
#include <algorithm>
#include <cstdint>

#include "core/scan_line.hpp"
#include "cpu/parallel.hpp"
#include "tapeflow/core/tensor.hpp"

namespace tapeflow::cpu {

/** One line: its n elements start at x_at and out_at, steps apart. */
struct AxisLine {
  int64_t x_at, out_at, n, x_step, out_step;
};

/**
 * Calls line(AxisLine) for each line along `axis` of x and out (one shape),
 * lines split over the threads; none when out is empty.
 */
template <class F>
void for_each_line(const Tensor& x, const Tensor& out, int64_t axis, F&& line) {
  if (out.numel() == 0) return;
  const int64_t n = x.shape()[axis];
  const ScanLines lines =
      scan_lines(x.shape(), x.strides(), out.strides(), axis);
  parallel_for(out.numel() / n, std::max<int64_t>(1, kParallelGrain / n),
               [&](int64_t begin, int64_t end) {
                 AxisLine at{0, 0, n, x.strides()[axis], out.strides()[axis]};
                 for (int64_t k = begin; k < end; ++k) {
                   lines.starts(k, at.x_at, at.out_at);
                   line(at);
                 }
               });
}

}  // namespace tapeflow::cpu
