#pragma once
#include "ops/op.hpp"

namespace tapeflow {

/** Reduction over sorted, distinct `axes` (normalized by the public function).
 */
struct ReduceOp {
  Shape axes;
  bool keepdims = false;
  TensorSpec infer(Inputs in) const;
  /** The input shape with every reduced axis set to 1. */
  Shape kept_shape(const Shape& in) const;
  bool reduces(int64_t axis) const;
};

struct Sum : ReduceOp {
  static constexpr const char* name = "sum";
  static constexpr int save = kSaveNothing;
  Grads vjp(const VjpArgs& a) const;
};
struct Prod : ReduceOp {
  static constexpr const char* name = "prod";
  static constexpr int save = kSaveInputs | kSaveOutput;
  Grads vjp(const VjpArgs& a) const;
};
struct Max : ReduceOp {
  static constexpr const char* name = "max";
  static constexpr int save = kSaveInputs | kSaveOutput;
  Grads vjp(const VjpArgs& a) const;
};
struct Min : ReduceOp {
  static constexpr const char* name = "min";
  static constexpr int save = kSaveInputs | kSaveOutput;
  Grads vjp(const VjpArgs& a) const;
};

/**
 * The int64 count of nonzero elements (NaN included) of any non-string dtype,
 * read as they are: no bool_ or int64 copy of the input. No gradient.
 */
struct CountNonzero : ReduceOp {
  static constexpr const char* name = "count_nonzero";
  TensorSpec infer(Inputs in) const {
    return {ReduceOp::infer(in).shape, int64};
  }
};

/**
 * Running sums along `axis` (normalized), the output the input's shape:
 * `exclusive` leaves each element out of its own sum, `reverse` sums from
 * the end. Its gradient is the cumsum of the output gradient the other way.
 */
struct Cumsum {
  static constexpr const char* name = "cumsum";
  static constexpr int save = kSaveNothing;
  int64_t axis;
  bool exclusive = false;
  bool reverse = false;
  TensorSpec infer(Inputs in) const;
  Grads vjp(const VjpArgs& a) const;
};

/** Index of the first extreme along one axis; int64 result, no gradient. */
struct ArgReduce {
  int64_t axis;
  TensorSpec infer(Inputs in) const;
};
struct ArgMax : ArgReduce {
  static constexpr const char* name = "argmax";
};
struct ArgMin : ArgReduce {
  static constexpr const char* name = "argmin";
};

/**
 * The int64 positions that sort x along `axis` (core/sort_order.hpp's
 * order: stable, NaN last ascending and first descending); no gradient.
 */
struct ArgSort {
  static constexpr const char* name = "argsort";
  int64_t axis;
  bool descending = false;
  TensorSpec infer(Inputs in) const { return {in[0].shape(), int64}; }
};

}  // namespace tapeflow
