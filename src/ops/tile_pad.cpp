// tile and pad: composites of broadcast_to, reshape, slice, reverse and
// concat, so every device that has those kernels has these, and their
// gradients are those ops' (a sum over the copies, a slice of the padded
// gradient, mirrored edges added back where they came from).
#include "core/dtype_dispatch.hpp"
#include "core/op_error.hpp"
#include "ops/composite.hpp"
#include "tapeflow/creation.hpp"
#include "tapeflow/ops/shape.hpp"

namespace tapeflow {
namespace {

/** a * b, or a ValueError naming `op` where the extent would overflow. */
int64_t checked_extent(int64_t a, int64_t b, const char* op) {
  int64_t product;
  if (__builtin_mul_overflow(a, b, &product))
    throw op_error<ValueError>(op, "expected an extent below 2^63, got ", a,
                               " * ", b);
  return product;
}

const char* mode_name(PadMode mode) {
  return mode == PadMode::reflect ? "reflect" : "symmetric";
}

/**
 * The `count` elements pad puts before (or `after`) x along `axis`: the
 * constant, or x's edge mirrored, without the edge element (reflect) or
 * with it (symmetric).
 */
Tensor edge(const Tensor& x, int64_t axis, int64_t count, bool after,
            PadMode mode, double constant_value) {
  if (mode == PadMode::constant) {
    Shape shape = x.shape();
    shape[axis] = count;
    return full(shape, constant_value, x.dtype(), x.device());
  }
  const int64_t skip = mode == PadMode::reflect ? 1 : 0;
  std::vector<int64_t> begin(x.rank(), 0), size(x.rank(), -1);
  begin[axis] = after ? x.shape()[axis] - count - skip : skip;
  size[axis] = count;
  return reverse(slice(x, begin, size), {axis});
}

}  // namespace

Tensor tile(const Tensor& x, const std::vector<int64_t>& multiples) {
  if (static_cast<int64_t>(multiples.size()) != x.rank())
    throw op_error<ValueError>("tile", "expected ", x.rank(),
                               " multiples (x's rank), got ", multiples.size());
  // x (d0, d1, ...) as (1, d0, 1, d1, ...), broadcast to (m0, d0, m1, d1,
  // ...), then merged pairwise: (m0 d0, m1 d1, ...).
  Shape spread, broadcast, tiled;
  int64_t numel = 1;
  for (int64_t i = 0; i < x.rank(); ++i) {
    if (multiples[i] < 0)
      throw op_error<ValueError>("tile", "expected multiples >= 0, got ",
                                 multiples[i], " for axis ", i);
    spread.push_back(1);
    spread.push_back(x.shape()[i]);
    broadcast.push_back(multiples[i]);
    broadcast.push_back(x.shape()[i]);
    tiled.push_back(checked_extent(multiples[i], x.shape()[i], "tile"));
    numel = checked_extent(numel, tiled.back(), "tile");
  }
  return composite("tile", [&] {
    return reshape(broadcast_to(reshape(x, spread), broadcast), tiled);
  });
}

Tensor pad(const Tensor& x,
           const std::vector<std::pair<int64_t, int64_t>>& paddings,
           double constant_value) {
  return pad(x, paddings, PadMode::constant, constant_value);
}

Tensor pad(const Tensor& x,
           const std::vector<std::pair<int64_t, int64_t>>& paddings,
           PadMode mode, double constant_value) {
  if (mode == PadMode::constant && is_string(x.dtype())) refuse_string("pad");
  if (static_cast<int64_t>(paddings.size()) != x.rank())
    throw op_error<ValueError>("pad", "expected ", x.rank(),
                               " (before, after) pairs (x's rank), got ",
                               paddings.size());
  int64_t numel = 1;
  for (int64_t i = 0; i < x.rank(); ++i) {
    const auto [before, after] = paddings[i];
    if (before < 0 || after < 0)
      throw op_error<ValueError>("pad", "expected paddings >= 0, got (", before,
                                 ", ", after, ") for axis ", i);
    if (mode != PadMode::constant) {
      const int64_t most = x.shape()[i] - (mode == PadMode::reflect ? 1 : 0);
      if (before > most || after > most)
        throw op_error<ValueError>("pad", "expected paddings <= ", most,
                                   " for axis ", i, " (extent ", x.shape()[i],
                                   ", mode ", mode_name(mode), "), got (",
                                   before, ", ", after, ")");
    }
    int64_t extent = x.shape()[i];
    if (__builtin_add_overflow(extent, before, &extent) ||
        __builtin_add_overflow(extent, after, &extent))
      throw op_error<ValueError>(
          "pad", "expected an extent below 2^63 on axis ", i, ", got ",
          x.shape()[i], " + ", before, " + ", after);
    numel = checked_extent(numel, extent, "pad");
  }
  return composite("pad", [&] {
    Tensor out = x;
    for (int64_t i = 0; i < x.rank(); ++i) {
      const auto [before, after] = paddings[i];
      if (before == 0 && after == 0) continue;
      std::vector<Tensor> parts;
      if (before > 0)
        parts.push_back(edge(out, i, before, false, mode, constant_value));
      parts.push_back(out);
      if (after > 0)
        parts.push_back(edge(out, i, after, true, mode, constant_value));
      out = concat(parts, i);
    }
    return out;
  });
}

}  // namespace tapeflow
