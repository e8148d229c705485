#include "dist/fold.hpp"

#include "core/dtype_dispatch.hpp"
#include "dist/fold_math.hpp"

namespace tapeflow::dist::detail {
namespace {

template <class T, ReduceOp Op>
void fold_rows(T* out, const T* a, const T* b, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = combine<Op>(a[i], b[i]);
}

/** out = a op b (out may be a): one switch per call, then a loop the
 * compiler vectorizes. */
template <class T>
void fold_typed(ReduceOp op, T* out, const T* a, const T* b, int64_t n) {
  switch (op) {
    case ReduceOp::sum:
    case ReduceOp::mean:
      return fold_rows<T, ReduceOp::sum>(out, a, b, n);
    case ReduceOp::max:
      return fold_rows<T, ReduceOp::max>(out, a, b, n);
    case ReduceOp::min:
      return fold_rows<T, ReduceOp::min>(out, a, b, n);
  }
}

}  // namespace

void check_reducible(DType dtype, ReduceOp op, const char* what) {
  if (is_string(dtype))
    throw op_error<DTypeError>(what, "expected a numeric tensor, got string");
  if (dtype == DType::bool_ && op == ReduceOp::mean)
    throw op_error<DTypeError>(what,
                               "expected a numeric tensor for mean, got bool");
}

void fold_pair(DType dtype, ReduceOp op, void* out, const void* a,
               const void* b, int64_t n) {
  dispatch_all(dtype, "all_reduce", [&](auto zero) {
    using T = decltype(zero);
    fold_typed(op, static_cast<T*>(out), static_cast<const T*>(a),
               static_cast<const T*>(b), n);
  });
}

void fold_into(DType dtype, ReduceOp op, void* acc, const void* x, int64_t n) {
  fold_pair(dtype, op, acc, acc, x, n);
}

void finish(DType dtype, ReduceOp op, void* acc, int64_t n, int ranks) {
  if (op != ReduceOp::mean || ranks == 1) return;
  dispatch_all(dtype, "all_reduce", [&](auto zero) {
    using T = decltype(zero);
    T* a = static_cast<T*>(acc);
    for (int64_t i = 0; i < n; ++i) a[i] = mean_of(a[i], ranks);
  });
}

}  // namespace tapeflow::dist::detail
