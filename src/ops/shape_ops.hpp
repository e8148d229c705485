#pragma once
#include "ops/op.hpp"

namespace tapeflow {

/** View ops: `view(x)` validates and builds the result; no kernel. */
struct Reshape {
  static constexpr const char* name = "reshape";
  static constexpr int save = kSaveNothing;
  Shape shape;
  Tensor view(const Tensor& x) const;
  Grads vjp(const VjpArgs& a) const;
};
struct Transpose {
  static constexpr const char* name = "transpose";
  static constexpr int save = kSaveNothing;
  Shape perm;
  Tensor view(const Tensor& x) const;
  Grads vjp(const VjpArgs& a) const;
};
struct Slice {
  static constexpr const char* name = "slice";
  static constexpr int save = kSaveNothing;
  Shape begin, size;
  Tensor view(const Tensor& x) const;
  Grads vjp(const VjpArgs& a) const;
};
struct BroadcastTo {
  static constexpr const char* name = "broadcast_to";
  static constexpr int save = kSaveNothing;
  Shape shape;
  Tensor view(const Tensor& x) const;
  Grads vjp(const VjpArgs& a) const;
};

/** Zeros of `input_shape` with the gradient written at `begin` (slice's vjp).
 */
struct SliceGrad {
  static constexpr const char* name = "slice_grad";
  static constexpr int save = kSaveNothing;
  Shape begin, input_shape;
  TensorSpec infer(Inputs in) const { return {input_shape, in[0].dtype()}; }
  Grads vjp(const VjpArgs& a) const;
};
struct Concat {
  static constexpr const char* name = "concat";
  static constexpr bool strings = true;
  static constexpr int save = kSaveNothing;
  int64_t axis;
  TensorSpec infer(Inputs in) const;
  Grads vjp(const VjpArgs& a) const;
};
/** Inputs (params, indices). */
struct Gather {
  static constexpr const char* name = "gather";
  static constexpr bool strings = true;
  static constexpr int save = kSaveInputs;
  int64_t axis;
  TensorSpec infer(Inputs in) const;
  Grads vjp(const VjpArgs& a) const;
};
/** Inputs (indices, grad): scatter-adds grad rows into zeros(params_shape). */
struct GatherGrad {
  static constexpr const char* name = "gather_grad";
  static constexpr int save = kSaveInputs;
  int64_t axis;
  Shape params_shape;
  TensorSpec infer(Inputs in) const { return {params_shape, in[1].dtype()}; }
  Grads vjp(const VjpArgs& a) const;
};
/**
 * x with the order of its elements reversed along `axes` (tf.reverse): a
 * copy of source(x), the view that reads x back to front along them.
 */
struct Reverse {
  static constexpr const char* name = "reverse";
  static constexpr bool strings = true;
  static constexpr int save = kSaveNothing;
  Shape axes;  // distinct, each with an extent above 1
  TensorSpec infer(Inputs in) const { return {in[0].shape(), in[0].dtype()}; }
  Grads vjp(const VjpArgs& a) const;
  /**
   * x seen from its last element back along the axes: a view with negative
   * strides, for the kernels' strided copy only (no public tensor has them).
   */
  Tensor source(const Tensor& x) const;
};
struct OneHot {
  static constexpr const char* name = "one_hot";
  int64_t depth;
  double on_value, off_value;
  DType dtype;
  TensorSpec infer(Inputs in) const;
};

/**
 * x, or for a Variable a recorded identity view of its buffer: what an op
 * that changes nothing (a reshape to its own shape, a cast to its own dtype)
 * returns. The Variable's own handle would follow its later assigns; the
 * view keeps the value read now (copy on write), as TF reads a variable.
 */
Tensor value_of(const Tensor& x);

}  // namespace tapeflow
