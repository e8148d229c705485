#pragma once
// Elementwise op structs. Each is one line of attributes here, one vjp next
// to its public function in src/ops/, and one functor per backend.
#include "ops/op.hpp"

namespace tapeflow {

/**
 * A unary op with its gradient rule: one line, e.g.
 * TPF_UNARY_OP(Exp, "exp", kSaveOutput). Its vjp is defined next to the
 * public function in src/ops/unary.cpp.
 */
#define TPF_UNARY_OP(Type, op_name, saves)       \
  struct Type : UnaryOp {                        \
    static constexpr const char* name = op_name; \
    static constexpr int save = saves;           \
    Grads vjp(const VjpArgs& a) const;           \
  }

TPF_UNARY_OP(Neg, "neg", kSaveNothing);
TPF_UNARY_OP(Exp, "exp", kSaveOutput);
TPF_UNARY_OP(Log, "log", kSaveInputs);
TPF_UNARY_OP(Sqrt, "sqrt", kSaveOutput);
TPF_UNARY_OP(Rsqrt, "rsqrt", kSaveOutput);
TPF_UNARY_OP(Abs, "abs", kSaveInputs);
TPF_UNARY_OP(Sign, "sign", kSaveNothing);
TPF_UNARY_OP(Square, "square", kSaveInputs);
TPF_UNARY_OP(Sin, "sin", kSaveInputs);
TPF_UNARY_OP(Cos, "cos", kSaveInputs);
TPF_UNARY_OP(Tanh, "tanh", kSaveOutput);
TPF_UNARY_OP(Sigmoid, "sigmoid", kSaveOutput);
TPF_UNARY_OP(Expm1, "expm1", kSaveOutput);
TPF_UNARY_OP(Log1p, "log1p", kSaveInputs);
TPF_UNARY_OP(Erf, "erf", kSaveInputs);
TPF_UNARY_OP(Relu, "relu", kSaveOutput);
TPF_UNARY_OP(Atan, "atan", kSaveInputs);
TPF_UNARY_OP(Floor, "floor", kSaveNothing);
TPF_UNARY_OP(Ceil, "ceil", kSaveNothing);
TPF_UNARY_OP(Round, "round", kSaveNothing);

struct Add : BinaryOp<Add> {
  static constexpr const char* name = "add";
  static constexpr bool strings = true;  // concatenation
  static constexpr int save = kSaveNothing;
  Grads vjp(const VjpArgs& a) const;
};
struct Sub : BinaryOp<Sub> {
  static constexpr const char* name = "sub";
  static constexpr int save = kSaveNothing;
  Grads vjp(const VjpArgs& a) const;
};
struct Mul : BinaryOp<Mul> {
  static constexpr const char* name = "mul";
  static constexpr int save = kSaveInputs;
  Grads vjp(const VjpArgs& a) const;
};
struct Div : BinaryOp<Div> {
  static constexpr const char* name = "div";
  static constexpr int save = kSaveInputs;
  Grads vjp(const VjpArgs& a) const;
};
struct Pow : BinaryOp<Pow> {
  static constexpr const char* name = "pow";
  static constexpr int save = kSaveInputs | kSaveOutput;
  Grads vjp(const VjpArgs& a) const;
};
struct Minimum : BinaryOp<Minimum> {
  static constexpr const char* name = "minimum";
  static constexpr int save = kSaveInputs;
  Grads vjp(const VjpArgs& a) const;
};
struct Maximum : BinaryOp<Maximum> {
  static constexpr const char* name = "maximum";
  static constexpr int save = kSaveInputs;
  Grads vjp(const VjpArgs& a) const;
};

/** Floor division and its remainder (core/floor_division.hpp). */
struct FloorDiv : BinaryOp<FloorDiv> {
  static constexpr const char* name = "floordiv";
  static constexpr int save = kSaveNothing;
  Grads vjp(const VjpArgs& a) const;
};
struct FloorMod : BinaryOp<FloorMod> {
  static constexpr const char* name = "floormod";
  static constexpr int save = kSaveInputs;
  Grads vjp(const VjpArgs& a) const;
};
/** atan2(y, x): the angle of the point (x, y), inputs {y, x}. */
struct Atan2 : BinaryOp<Atan2> {
  static constexpr const char* name = "atan2";
  static constexpr int save = kSaveInputs;
  Grads vjp(const VjpArgs& a) const;
};

/** relu's gradient: g where y > 0, else 0. Inputs {y, g}. */
struct ReluGrad : BinaryOp<ReluGrad> {
  static constexpr const char* name = "relu_grad";
  static constexpr int save = kSaveInputs;
  Grads vjp(const VjpArgs& a) const;
};

/**
 * tanh's gradient: g (1 - y^2), inputs {y, g}, as TensorFlow's TanhGrad: one
 * pass where the composite took three ops and two temporaries.
 */
struct TanhGrad : BinaryOp<TanhGrad> {
  static constexpr const char* name = "tanh_grad";
  static constexpr int save = kSaveInputs;
  Grads vjp(const VjpArgs& a) const;
};
/** sigmoid's gradient: g y (1 - y), inputs {y, g} (TensorFlow's SigmoidGrad).
 */
struct SigmoidGrad : BinaryOp<SigmoidGrad> {
  static constexpr const char* name = "sigmoid_grad";
  static constexpr int save = kSaveInputs;
  Grads vjp(const VjpArgs& a) const;
};

struct Equal : PredicateOp<Equal> {
  static constexpr const char* name = "equal";
  static constexpr bool strings = true;
};
struct NotEqual : PredicateOp<NotEqual> {
  static constexpr const char* name = "not_equal";
  static constexpr bool strings = true;
};
struct Less : PredicateOp<Less> {
  static constexpr const char* name = "less";
};
struct LessEqual : PredicateOp<LessEqual> {
  static constexpr const char* name = "less_equal";
};
struct Greater : PredicateOp<Greater> {
  static constexpr const char* name = "greater";
};
struct GreaterEqual : PredicateOp<GreaterEqual> {
  static constexpr const char* name = "greater_equal";
};
struct LogicalAnd : PredicateOp<LogicalAnd> {
  static constexpr const char* name = "logical_and";
};
struct LogicalOr : PredicateOp<LogicalOr> {
  static constexpr const char* name = "logical_or";
};
struct LogicalNot : UnaryOp {
  static constexpr const char* name = "logical_not";
};

/** where(cond, x, y): inputs cond (bool_), x, y of one dtype. */
struct Where {
  static constexpr const char* name = "where";
  static constexpr bool strings = true;
  static constexpr int save = kSaveInputs;
  TensorSpec infer(Inputs in) const;
  Grads vjp(const VjpArgs& a) const;
};

/** Dtype conversion; also the strided copy behind contiguous(). */
struct Cast {
  static constexpr const char* name = "cast";
  static constexpr bool strings = true;  // string to string: a copy
  static constexpr int save = kSaveNothing;
  DType dtype;
  TensorSpec infer(Inputs in) const { return {in[0].shape(), dtype}; }
  Grads vjp(const VjpArgs& a) const;
};

/** Copy to another device (Tensor::to); differentiable. */
struct ToDevice {
  static constexpr const char* name = "to";
  static constexpr int save = kSaveNothing;
  Device device;
  Tensor view(const Tensor& x) const;
  Grads vjp(const VjpArgs& a) const;
};

/** Uniform/normal random numbers from a counter-based generator (no inputs). */
struct RandomUniform {
  static constexpr const char* name = "random_uniform";
  Shape shape;
  DType dtype;
  double lo, hi;
  uint64_t seed, offset;
  TensorSpec infer(Inputs) const { return {shape, dtype}; }
};
struct RandomNormal {
  static constexpr const char* name = "random_normal";
  Shape shape;
  DType dtype;
  double mean, stddev;
  uint64_t seed, offset;
  TensorSpec infer(Inputs) const { return {shape, dtype}; }
};
/** Constant fill (no inputs). */
struct Full {
  static constexpr const char* name = "full";
  Shape shape;
  DType dtype;
  double value;
  TensorSpec infer(Inputs) const { return {shape, dtype}; }
};

/** Casts x and y to their promoted dtype (recorded, so gradients flow back). */
std::pair<Tensor, Tensor> promote_pair(const Tensor& x, const Tensor& y,
                                       const char* op);
/** promote_pair for arithmetic: bools are computed as int32 numbers. */
std::pair<Tensor, Tensor> arithmetic_pair(const Tensor& x, const Tensor& y,
                                          const char* op);
/** x in its floating type (integers -> float32). */
Tensor to_floating(const Tensor& x);
/** x as bool_ for logical ops and where (strings pass, to be refused). */
Tensor truth(const Tensor& x);

}  // namespace tapeflow
