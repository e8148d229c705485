#include "dist/fold.hpp"

#include <cmath>

#include "core/dtype_dispatch.hpp"

namespace tapeflow::dist::detail {
namespace {

template <class T>
T combine(ReduceOp op, T a, T b) {
  switch (op) {
    case ReduceOp::sum:
    case ReduceOp::mean:
      if constexpr (std::is_same_v<T, uint8_t>)
        return static_cast<T>(a | b);
      else
        return a + b;
    case ReduceOp::max:
      if constexpr (std::is_floating_point_v<T>)
        if (std::isnan(a) || std::isnan(b)) return a + b;  // NaN wins
      return b > a ? b : a;
    case ReduceOp::min:
      break;
  }
  if constexpr (std::is_floating_point_v<T>)
    if (std::isnan(a) || std::isnan(b)) return a + b;
  return b < a ? b : a;
}

template <class T, ReduceOp Op>
void fold_rows(T* out, const T* a, const T* b, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = combine(Op, a[i], b[i]);
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
  if (dtype == DType::bool_ && op == ReduceOp::mean)
    throw op_error<DTypeError>(what,
                               "expected a numeric tensor for mean, got bool");
}

void fold_pair(DType dtype, ReduceOp op, void* out, const void* a,
               const void* b, int64_t n) {
  dispatch_all(dtype, [&](auto zero) {
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
  dispatch_all(dtype, [&](auto zero) {
    using T = decltype(zero);
    T* a = static_cast<T*>(acc);
    if constexpr (std::is_floating_point_v<T>) {
      const T scale = T(1) / T(ranks);
      for (int64_t i = 0; i < n; ++i) a[i] = a[i] * scale;
    } else if constexpr (!std::is_same_v<T, uint8_t>) {
      for (int64_t i = 0; i < n; ++i) a[i] = static_cast<T>(a[i] / ranks);
    }
  });
}

}  // namespace tapeflow::dist::detail
