#pragma once
// The canonical combination of the ranks' values, element by element in the
// tensor's dtype: acc = ((x0 op x1) op x2) ...; mean then multiplies floats
// by 1/N (rounded to the dtype) and divides integers by N (truncating). The
// canonical all_reduce, reduce_scatter and simulate() all call these, which
// is what makes them bitwise equal.
#include <cstdint>

#include "tapeflow/core/dtype.hpp"
#include "tapeflow/dist/communicator.hpp"

namespace tapeflow::dist::detail {

/** acc[i] = acc[i] op x[i] for n elements of `dtype` (sum of bools: or). */
void fold_into(DType dtype, ReduceOp op, void* acc, const void* x, int64_t n);
/** out[i] = a[i] op b[i]: the first step of a fold, without a copy. */
void fold_pair(DType dtype, ReduceOp op, void* out, const void* a,
               const void* b, int64_t n);
/** Mean's last step over `ranks` values; other ops leave acc alone. */
void finish(DType dtype, ReduceOp op, void* acc, int64_t n, int ranks);
/** DTypeError for combinations that mean nothing (the mean of bools). */
void check_reducible(DType dtype, ReduceOp op, const char* what);

}  // namespace tapeflow::dist::detail
