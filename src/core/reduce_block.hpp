#pragma once
// The axes of a CUDA reduction on one side, kept (one per output) or
// reduced, as cuda/reduce.cu walks them: a flat index into the block's
// elements becomes an element offset. Shared with CI's host tests, which
// compare it with plain 64-bit division.
#include <cstdint>

#include "core/fast_divmod.hpp"
#include "core/host_device.hpp"
#include "core/strided_offsets.hpp"
#include "tapeflow/core/shape.hpp"

namespace tapeflow {

struct ReduceBlock {
  int rank = 0;
  bool dense = true;  // offset(i) == i * unit: no index arithmetic
  int64_t unit = 1;
  int64_t count = 1;  // the product of the extents
  int64_t shape[kMaxRank];
  int64_t strides[kMaxRank];
  FastDivmod extents[kMaxRank];  // shape's, exact while count < 2^31

  /** Appends an axis inside the others (row-major order). */
  void add(int64_t extent, int64_t stride) {
    shape[rank] = extent;
    strides[rank] = stride;
    extents[rank] = FastDivmod(
        extent < (int64_t{1} << 31) ? static_cast<uint32_t>(extent) : 1u);
    // Unsigned: an empty tensor's other extents may be huge (its count is 0
    // and no index reaches it), and a wrapped product is never indexed.
    count = static_cast<int64_t>(static_cast<uint64_t>(count) *
                                 static_cast<uint64_t>(extent));
    ++rank;
    // Unsigned as well: equal where the signed product fits, and a wrapped
    // one belongs to an empty block.
    uint64_t expected = static_cast<uint64_t>(strides[rank - 1]);
    dense = true;
    for (int d = rank - 1; d >= 0; --d) {
      if (shape[d] != 1 && static_cast<uint64_t>(strides[d]) != expected)
        dense = false;
      expected *= static_cast<uint64_t>(shape[d]);
    }
    unit = strides[rank - 1];
  }

  /**
   * The offset of element i (< count): a product where dense; else a split
   * of i by each extent, through FastDivmods below 2^31 elements (a few
   * instructions per axis, where 64-bit divisions take dozens: an NCHW
   * bias gradient, kept channels between reduced axes, splits every
   * element it reads).
   */
  TPF_HOST_DEVICE int64_t offset(int64_t i) const {
    if (dense) return i * unit;
    if (count < (int64_t{1} << 31)) {
      int64_t off[1];
      strided_offsets<1>(static_cast<uint32_t>(i), rank, extents, &strides,
                         off);
      return off[0];
    }
    int64_t off = 0;
    for (int d = rank - 1; d >= 0; --d) {
      off += (i % shape[d]) * strides[d];
      i /= shape[d];
    }
    return off;
  }
};

}  // namespace tapeflow
