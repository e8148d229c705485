#pragma once
// Pooling op structs. Every op works on (N, C, spatial...) with 1 to 3
// spatial axes; channels-last layouts are transposed views made by the
// public functions in src/ops/nn/pool.cpp.
#include "ops/elementwise_ops.hpp"

namespace tapeflow {

/** Window of a pooling op, one entry per spatial axis. */
struct PoolWindow {
  Shape ksize, strides, pad_lo, pad_hi;
  /** (N, C, out spatial...) for an input of shape `in`. */
  Shape output_shape(const Shape& in) const;
};

struct MaxPool {
  static constexpr const char* name = "max_pool";
  static constexpr int save = kSaveInputs;
  PoolWindow w;
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
/** Inputs (x, dy): dy routed to the first maximum of each window. */
struct MaxPoolGrad {
  static constexpr const char* name = "max_pool_grad";
  static constexpr int save = kSaveInputs;
  PoolWindow w;
  TensorSpec infer(Inputs in) const { return {in[0].shape(), in[1].dtype()}; }
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
