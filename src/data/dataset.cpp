// The compiled parts of dataset.hpp: slicing rows and range().
#include "tapeflow/data/dataset.hpp"

#include "tapeflow/ops/shape.hpp"

namespace tapeflow::data {
namespace detail {

Tensor row(const Tensor& t, int64_t i) {
  std::vector<int64_t> begin(static_cast<size_t>(t.rank()), 0);
  std::vector<int64_t> size(static_cast<size_t>(t.rank()), -1);
  begin[0] = i;
  size[0] = 1;
  return squeeze(slice(t, begin, size), {0});
}

}  // namespace detail

namespace {
/**
 * The length of range(start, stop, step), in unsigned arithmetic: the span
 * of two int64s can exceed INT64_MAX, and so can the length (up to 2^64 - 1).
 */
uint64_t range_length(int64_t start, int64_t stop, int64_t step) {
  if (step > 0 ? stop <= start : stop >= start) return 0;
  const auto ustart = static_cast<uint64_t>(start);
  const auto ustop = static_cast<uint64_t>(stop);
  const uint64_t span = step > 0 ? ustop - ustart : ustart - ustop;
  const uint64_t stride =
      step > 0 ? static_cast<uint64_t>(step) : 0 - static_cast<uint64_t>(step);
  return (span - 1) / stride + 1;
}
}  // namespace

Dataset<Tensor> range(int64_t start, int64_t stop, int64_t step) {
  if (step == 0) throw ValueError("[range] expected a non-zero step, got 0");
  const uint64_t n = range_length(start, stop, step);
  return Dataset<Tensor>(
      [start, step, n] {
        // Element k is start + k * step, computed modulo 2^64: for k < n the
        // true value lies in [start, stop), so the wrapped result is exact and
        // nothing overflows (stepping `i += step` past INT64_MAX would).
        return detail::make_fn_iterator<Tensor>(
            [start, step, n,
             k = uint64_t{0}]() mutable -> std::optional<Tensor> {
              if (k >= n) return std::nullopt;
              const auto v =
                  static_cast<int64_t>(static_cast<uint64_t>(start) +
                                       k * static_cast<uint64_t>(step));
              ++k;
              return from_buffer(&v, {}, int64);
            });
      },
      n > uint64_t{INT64_MAX} ? INT64_MAX : static_cast<int64_t>(n));
}

}  // namespace tapeflow::data
