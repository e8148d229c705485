// Linear algebra: matmul, matrix_inverse, matrix_determinant.
#include "tapeflow/ops/linalg.hpp"

#include "core/op_error.hpp"
#include "ops/apply.hpp"
#include "ops/elementwise_ops.hpp"
#include "ops/linalg_ops.hpp"
#include "tapeflow/ops/math.hpp"
#include "tapeflow/ops/shape.hpp"

namespace tapeflow {
namespace {

Shape batch_of(const Shape& s) {
  Shape b;
  for (int64_t i = 0; i + 2 < s.size(); ++i) b.push_back(s[i]);
  return b;
}

/** Swaps the last two axes (a view). */
Tensor t2(const Tensor& x) {
  std::vector<int64_t> perm(x.rank());
  for (int64_t i = 0; i < x.rank(); ++i) perm[i] = i;
  std::swap(perm[x.rank() - 1], perm[x.rank() - 2]);
  return transpose(x, perm);
}

void check_float(const Tensor& x, const char* op) {
  if (!is_floating(x.dtype()))
    throw op_error<DTypeError>(op, "expected float32 or float64, got ",
                               dtype_name(x.dtype()));
}

void check_square(const Tensor& x, const char* op) {
  check_float(x, op);
  if (x.rank() < 2 || x.shape()[x.rank() - 1] != x.shape()[x.rank() - 2])
    throw op_error<ShapeError>(
        op, "expected square matrices in the last two axes, got ",
        x.shape().str());
}

}  // namespace

Tensor matmul(const Tensor& a, const Tensor& b, bool transpose_a,
              bool transpose_b) {
  if (a.rank() < 2 || b.rank() < 2)
    throw ShapeError("[matmul] expected operands of rank >= 2, got " +
                     a.shape().str() + " and " + b.shape().str());
  auto [x, y] = promote_pair(a, b, "matmul");
  check_float(x, "matmul");
  return apply(MatMul{}, {transpose_a ? t2(x) : x, transpose_b ? t2(y) : y});
}

TensorSpec MatMul::infer(Inputs in) const {
  const Shape& a = in[0].shape();
  const Shape& b = in[1].shape();
  if (a[a.size() - 1] != b[b.size() - 2])
    throw ShapeError("[matmul] expected inner dimensions to match, got " +
                     a.str() + " and " + b.str());
  Shape out = broadcast_shapes(batch_of(a), batch_of(b), name);
  out.push_back(a[a.size() - 2]);
  out.push_back(b[b.size() - 1]);
  return {out, in[0].dtype()};
}
// Both products read the forward's operands transposed: they take them as
// the forward converted them.
Grads MatMul::vjp(const VjpArgs& a) const {
  const MatMul product{a.payload};
  return {a.needs(0) ? apply(product, {a.grad, t2(a.x(1))}) : Tensor(),
          a.needs(1) ? apply(product, {t2(a.x(0)), a.grad}) : Tensor()};
}

Tensor matrix_inverse(const Tensor& x) {
  check_square(x, "matrix_inverse");
  return apply(MatrixInverse{}, {x});
}
Grads MatrixInverse::vjp(const VjpArgs& a) const {
  const Tensor yt = t2(a.output());
  return {-matmul(matmul(yt, a.grad), yt)};
}

Tensor matrix_determinant(const Tensor& x) {
  check_square(x, "matrix_determinant");
  return apply(MatrixDeterminant{}, {x});
}
TensorSpec MatrixDeterminant::infer(Inputs in) const {
  return {batch_of(in[0].shape()), in[0].dtype()};
}
Grads MatrixDeterminant::vjp(const VjpArgs& a) const {
  // d det(X) / dX = det(X) * X^-T
  const Tensor scale = expand_dims(expand_dims(a.grad * a.output(), -1), -1);
  return {scale * t2(matrix_inverse(a.x()))};
}

}  // namespace tapeflow
