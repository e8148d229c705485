#pragma once
// Pooling op structs. Every op works on (N, C, spatial...) with 1 to 3
// spatial axes; channels-last layouts are transposed views made by the
// public functions in src/ops/nn/pool.cpp.
#include <memory>

#include "ops/elementwise_ops.hpp"

namespace tapeflow {

/** Window of a pooling op, one entry per spatial axis. */
struct PoolWindow {
  Shape ksize, strides, pad_lo, pad_hi;
  /** (N, C, out spatial...) for an input of shape `in`. */
  Shape output_shape(const Shape& in) const;
};

/**
 * A max-pool workspace: int32 of the output's shape, each element the index
 * of its window's first maximum in row-major order over the whole window
 * (padding included), the convention of oneDNN's workspace.
 */
struct MaxPool {
  static constexpr const char* name = "max_pool";
  static constexpr int save = kSaveNothing;
  PoolWindow w;
  /**
   * Set by the public function when a tape records: the kernel stores the
   * workspace there, and the recorded copy of the op hands it to the vjp.
   * An op has one output, and a second pass over x for the argmax would cost
   * as much as the forward itself, hence this side channel.
   */
  std::shared_ptr<Tensor> workspace;
  TensorSpec infer(Inputs in) const {
    return {w.output_shape(in[0].shape()), in[0].dtype()};
  }
  Grads vjp(const VjpArgs& a) const;
};
struct AvgPool {
  static constexpr const char* name = "avg_pool";
  static constexpr int save = kSaveNothing;
  PoolWindow w;
  bool count_include_pad = false;
  TensorSpec infer(Inputs in) const {
    return {w.output_shape(in[0].shape()), in[0].dtype()};
  }
  Grads vjp(const VjpArgs& a) const;
};
/**
 * Inputs (dy, workspace): each dy routed to its window's maximum, into a
 * tensor of `input_shape` (MaxPool's gradient; the adjoint of MaxPoolGather).
 */
struct MaxPoolScatter {
  static constexpr const char* name = "max_pool_scatter";
  static constexpr int save = kSaveInputs;
  PoolWindow w;
  Shape input_shape;
  TensorSpec infer(Inputs in) const { return {input_shape, in[0].dtype()}; }
  Grads vjp(const VjpArgs& a) const;
};
/**
 * Inputs (g, workspace): g (of the pooled input's shape) read at each
 * window's maximum, into the workspace's shape (adjoint of MaxPoolScatter).
 */
struct MaxPoolGather {
  static constexpr const char* name = "max_pool_gather";
  static constexpr int save = kSaveInputs;
  PoolWindow w;
  TensorSpec infer(Inputs in) const { return {in[1].shape(), in[0].dtype()}; }
  Grads vjp(const VjpArgs& a) const;
};
/** Input dy: spread evenly over each window (the adjoint of AvgPool). */
struct AvgPoolGrad {
  static constexpr const char* name = "avg_pool_grad";
  static constexpr int save = kSaveNothing;
  PoolWindow w;
  bool count_include_pad = false;
  Shape input_shape;
  TensorSpec infer(Inputs in) const { return {input_shape, in[0].dtype()}; }
  Grads vjp(const VjpArgs& a) const;
};
/**
 * int64 position of each window's first maximum within its (n, c) plane,
 * row-major over the spatial axes. No gradient.
 */
struct MaxPoolArgmax {
  static constexpr const char* name = "max_pool_argmax";
  static constexpr int save = kSaveNothing;
  PoolWindow w;
  TensorSpec infer(Inputs in) const {
    return {w.output_shape(in[0].shape()), int64};
  }
};

}  // namespace tapeflow
