#pragma once
// What every op struct is built from: the names of the op contract (save
// flags, VjpArgs, Grads, TensorSpec), the kernel registry and the bases of
// unary, binary and predicate ops. Op headers include this, not one another,
// so adding an elementwise op rebuilds no convolution or matmul file.
#include <vector>

#include "autograd/node.hpp"
#include "core/registry.hpp"
#include "tapeflow/ops/shape.hpp"

namespace tapeflow {

using autograd::kSaveInputs;
using autograd::kSaveNothing;
using autograd::kSaveOutput;
using autograd::TensorSpec;
using autograd::VjpArgs;
using Grads = std::vector<Tensor>;

/**
 * Ops that declare `strings = true` have string_ kernels (add, equal, where,
 * cast, concat, gather); apply refuses string inputs to every other op.
 */
template <class Op>
inline constexpr bool takes_strings = requires {
  requires Op::strings;
};

/** Same shape and dtype as the single input. */
struct UnaryOp {
  TensorSpec infer(Inputs in) const { return {in[0].shape(), in[0].dtype()}; }
};
/** Broadcast of the inputs; dtype already unified by the public function. */
template <class Self>
struct BinaryOp {
  TensorSpec infer(Inputs in) const {
    return {broadcast_shapes(in[0].shape(), in[1].shape(), Self::name),
            in[0].dtype()};
  }
};
/** Broadcast of the inputs; bool_ result. */
template <class Self>
struct PredicateOp {
  TensorSpec infer(Inputs in) const {
    return {broadcast_shapes(in[0].shape(), in[1].shape(), Self::name), bool_};
  }
};

}  // namespace tapeflow
