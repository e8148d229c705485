#pragma once
#include <memory>

#include "core/small_block_pool.hpp"
#include "tapeflow/core/tensor.hpp"

namespace tapeflow {

/** A fresh TensorImpl (no storage yet) from the small-block pool. */
inline std::shared_ptr<TensorImpl> new_tensor_impl() {
  return std::allocate_shared<TensorImpl>(SmallBlockAllocator<TensorImpl>());
}

/** Fresh contiguous tensor from the device's allocator (uninitialized). */
Tensor empty_tensor(const Shape& shape, DType dtype, Device device,
                    const char* op = "empty");
/** A handle onto `base`'s storage with another shape, strides and offset. */
Tensor make_view(const Tensor& base, const Shape& shape, const Shape& strides,
                 int64_t offset);
/** A handle of `dtype` onto `buffer` with this shape, strides and offset. */
Tensor make_view(std::shared_ptr<Storage> buffer, DType dtype,
                 const Shape& shape, const Shape& strides, int64_t offset);
/**
 * The tensor a kernel reads or writes: `t` itself, or for a Variable a plain
 * view of the buffer it has now, which the caller holds until it is done.
 * Threads that train one model together move a Variable to a fresh buffer
 * when they update it while a tape holds the old one (copy on write), and
 * that tape frees the old buffer when it goes, whoever still reads it.
 */
inline Tensor held(const Tensor& t) {
  if (!t.defined() || !t.impl()->variable) return t;
  return make_view(t, t.shape(), t.strides(), t.offset());
}
/**
 * Every in-place writer calls this before it writes into `dst`: it counts the
 * write in the buffer's version (which tape nodes check), and moves a
 * Variable whose buffer others hold to a fresh one, copying the old values
 * over when the write reads them (`keeps_values`, optimizer updates). The
 * writer writes through what it returns: `dst`, or for a Variable the buffer
 * chosen here, held (see `held`).
 */
[[nodiscard]] Tensor begin_in_place_write(const Tensor& dst, bool keeps_values,
                                          const char* op);
/**
 * The values Variable `t` holds at one moment, for a reader on another thread
 * than its writers (a checkpoint saved while training goes on): a held view
 * of its buffer, taken once the in-place writes already under way on that
 * buffer have finished. Later writes move the Variable to a fresh buffer
 * (copy on write), so the view never changes. Anything else comes back as is.
 */
Tensor snapshot(const Tensor& t);
/**
 * Copies `src` (converted to dst's dtype) into `dst` in place; not recorded.
 * A source that shares dst's buffer is copied whole first.
 */
void write_into(const Tensor& dst, const Tensor& src, const char* op);
/**
 * Moves Variable `v` to `device` in place (Module::to): every handle onto it
 * sees the new buffer; what a tape saved keeps the old one.
 */
void move_variable(const Tensor& v, Device device);
/** Contiguous copy of `x` that no tape records (views use it internally). */
Tensor materialize(const Tensor& x);

}  // namespace tapeflow
