// Kernels that move data between layouts: slice_grad, concat, reverse,
// gather, gather_grad (scatter-add) and one_hot.
#include <cstring>

#include "core/convert_value.hpp"
#include "core/creation_internal.hpp"
#include "core/dtype_dispatch.hpp"
#include "core/op_error.hpp"
#include "cpu/functors.hpp"
#include "cpu/strided_loop.hpp"
#include "cpu/string_kernels.hpp"
#include "ops/shape_ops.hpp"
#include "tapeflow/ops/shape.hpp"

namespace tapeflow::cpu {
namespace {

void zero(Tensor& out) {
  std::memset(out.raw_data(), 0, out.numel() * itemsize(out.dtype()));
}

/** dst (any strides) = src, same dtype. */
void copy_into(const Tensor& src, const Tensor& dst) {
  if (is_string(src.dtype())) return strings::copy(src, dst);
  dispatch_bits(src.dtype(), "copy", [&](auto tag) {
    using U = decltype(tag);
    const U* s = static_cast<const U*>(src.raw_data());
    U* d = static_cast<U*>(dst.raw_data());
    run_elementwise<2>(dst, {&src},
                       [&](const auto& off, int64_t n, const auto& st) {
                         if (st[0] == 1 && st[1] == 1) {
                           std::memcpy(d + off[0], s + off[1], n * sizeof(U));
                           return;
                         }
                         for (int64_t i = 0; i < n; ++i)
                           d[off[0] + i * st[0]] = s[off[1] + i * st[1]];
                       });
  });
}

/** out's region starting at `begin` with `shape`, as a strided view. */
Tensor region(const Tensor& out, const Shape& begin, const Shape& shape) {
  int64_t offset = out.offset();
  for (int64_t i = 0; i < out.rank(); ++i)
    offset += begin[i] * out.strides()[i];
  return make_view(out, shape, out.strides(), offset);
}

void slice_grad(const SliceGrad& op, Inputs in, const Outputs& outs) {
  Tensor& out = outs[0];
  zero(out);
  copy_into(in[0], region(out, op.begin, in[0].shape()));
}

void concat(const Concat& op, Inputs in, const Outputs& outs) {
  Tensor& out = outs[0];
  Shape begin;
  begin.resize(out.rank());
  for (const Tensor& t : in) {
    copy_into(t, region(out, begin, t.shape()));
    begin[op.axis] += t.shape()[op.axis];
  }
}

void reverse(const Reverse& op, Inputs in, const Outputs& outs) {
  if (outs[0].numel() == 0) return;
  copy_into(op.source(in[0]), outs[0]);
}

/** Indices as int64 after a bounds check against `limit`. */
std::vector<int64_t> checked_indices(const Tensor& indices, int64_t limit,
                                     const char* op) {
  std::vector<int64_t> idx = indices.to_vector<int64_t>();
  for (size_t i = 0; i < idx.size(); ++i) {
    if (idx[i] < 0 || idx[i] >= limit)
      throw op_error<IndexError>(op, "expected indices in [0, ", limit,
                                 "), got ", idx[i], " at position ", i);
  }
  return idx;
}

/** params viewed as (outer, axis, inner) blocks. */
struct Blocks {
  int64_t outer = 1, axis = 1, inner = 1;
};
Blocks blocks_of(const Shape& s, int64_t axis) {
  Blocks b;
  for (int64_t i = 0; i < axis; ++i) b.outer *= s[i];
  b.axis = s[axis];
  for (int64_t i = axis + 1; i < s.size(); ++i) b.inner *= s[i];
  return b;
}

void gather(const Gather& op, Inputs in, const Outputs& outs) {
  Tensor& out = outs[0];
  const Tensor p = materialize(in[0]);
  const Blocks b = blocks_of(p.shape(), op.axis);
  const std::vector<int64_t> idx = checked_indices(in[1], b.axis, "gather");
  if (is_string(p.dtype())) {
    const std::string* src = strings::chars(p);
    std::string* dst = strings::chars_out(out);
    for (int64_t o = 0, k = 0; o < b.outer; ++o)
      for (size_t j = 0; j < idx.size(); ++j, ++k)
        std::copy_n(src + (o * b.axis + idx[j]) * b.inner, b.inner,
                    dst + k * b.inner);
    return;
  }
  const size_t row = b.inner * itemsize(p.dtype());
  const char* src = static_cast<const char*>(p.raw_data());
  char* dst = static_cast<char*>(out.raw_data());
  const int64_t n = static_cast<int64_t>(idx.size());
  parallel_for(
      b.outer * n,
      std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(b.inner, 1)),
      [&](int64_t lo, int64_t hi) {
        for (int64_t k = lo; k < hi; ++k) {
          const int64_t o = k / n, j = k % n;
          std::memcpy(dst + k * row, src + (o * b.axis + idx[j]) * row, row);
        }
      });
}

void gather_grad(const GatherGrad& op, Inputs in, const Outputs& outs) {
  Tensor& out = outs[0];
  const Tensor g = materialize(in[1]);
  const Blocks b = blocks_of(op.params_shape, op.axis);
  const std::vector<int64_t> idx =
      checked_indices(in[0], b.axis, "gather_grad");
  zero(out);
  dispatch_numeric(g.dtype(), "gather_grad", [&](auto tag) {
    using T = decltype(tag);
    const T* src = static_cast<const T*>(g.raw_data());
    T* dst = static_cast<T*>(out.raw_data());
    const int64_t n = static_cast<int64_t>(idx.size());
    // Parallel over outer blocks only: repeated indices add into one row.
    parallel_for(b.outer, 1, [&](int64_t lo, int64_t hi) {
      for (int64_t o = lo; o < hi; ++o)
        for (int64_t j = 0; j < n; ++j) {
          T* d = dst + (o * b.axis + idx[j]) * b.inner;
          const T* s = src + (o * n + j) * b.inner;
          for (int64_t i = 0; i < b.inner; ++i) d[i] = AddF{}(d[i], s[i]);
        }
    });
  });
}

void one_hot(const OneHot& op, Inputs in, const Outputs& outs) {
  Tensor& out = outs[0];
  const std::vector<int64_t> idx = in[0].to_vector<int64_t>();
  dispatch_all(out.dtype(), OneHot::name, [&](auto tag) {
    using T = decltype(tag);
    T* o = static_cast<T*>(out.raw_data());
    const T on = convert_value<T>(op.on_value),
            off = convert_value<T>(op.off_value);
    for (size_t i = 0; i < idx.size(); ++i)
      for (int64_t d = 0; d < op.depth; ++d)
        o[i * op.depth + d] = idx[i] == d ? on : off;
  });
}

}  // namespace

void register_index(Registry& r) {
  constexpr auto cpu = DeviceType::cpu;
  r.set<SliceGrad>(cpu, slice_grad, "cpu");
  r.set<Concat>(cpu, concat, "cpu");
  r.set<Reverse>(cpu, reverse, "cpu");
  r.set<Gather>(cpu, gather, "cpu");
  r.set<GatherGrad>(cpu, gather_grad, "cpu");
  r.set<OneHot>(cpu, one_hot, "cpu");
}

}  // namespace tapeflow::cpu
