#pragma once
#include <memory>

#include "tapeflow/core/tensor.hpp"

namespace tapeflow {

/** Fresh contiguous tensor from the device's allocator (uninitialized). */
Tensor empty_tensor(const Shape& shape, DType dtype, Device device,
                    const char* op = "empty");
/** A handle onto `base`'s storage with another shape, strides and offset. */
Tensor make_view(const Tensor& base, const Shape& shape, const Shape& strides,
                 int64_t offset);
/** Copies `src` (converted to dst's dtype) into `dst` in place; not recorded.
 */
void write_into(const Tensor& dst, const Tensor& src, const char* op);
/** Contiguous copy of `x` that no tape records (views use it internally). */
Tensor materialize(const Tensor& x);

}  // namespace tapeflow
