// The compiled parts of batch_traits.hpp: stacking and padding.
#include "tapeflow/data/batch_traits.hpp"

#include <algorithm>

#include "core/op_error.hpp"
#include "tapeflow/ops/shape.hpp"

namespace tapeflow::data {
namespace detail {

Tensor stack(const std::vector<Tensor>& elements, const char* op) {
  const Tensor& first = elements.at(0);
  std::vector<Tensor> rows;
  rows.reserve(elements.size());
  for (size_t i = 0; i < elements.size(); ++i) {
    const Tensor& t = elements[i];
    if (!(t.shape() == first.shape()))
      throw op_error<ShapeError>(op, "expected every element of shape ",
                                 first.shape().str(), " (element 0's), got ",
                                 t.shape().str(), " at element ", i,
                                 "; padded_batch pads to a common shape");
    if (t.dtype() != first.dtype())
      throw op_error<DTypeError>(
          op, "expected every element of dtype ", dtype_name(first.dtype()),
          " (element 0's), got ", dtype_name(t.dtype()), " at element ", i);
    rows.push_back(expand_dims(t, 0));
  }
  return rows.size() == 1 ? rows[0].contiguous() : concat(rows, 0);
}

Tensor pad_and_stack(const std::vector<Tensor>& elements,
                     const std::vector<int64_t>& padded_shape, double value,
                     const char* op) {
  const Tensor& first = elements.at(0);
  const int64_t rank = first.rank();
  if (!padded_shape.empty() &&
      static_cast<int64_t>(padded_shape.size()) != rank)
    throw op_error<ShapeError>(op, "expected a padded shape of ", rank,
                               " entries (the elements' rank), got ",
                               padded_shape.size());
  Shape target = first.shape();
  for (size_t i = 0; i < elements.size(); ++i) {
    const Tensor& t = elements[i];
    if (t.rank() != rank)
      throw op_error<ShapeError>(op, "expected every element of rank ", rank,
                                 " (element 0's), got shape ", t.shape().str(),
                                 " at element ", i);
    for (int64_t d = 0; d < rank; ++d)
      target[d] = std::max(target[d], t.dim(d));
  }
  for (int64_t d = 0; d < rank && !padded_shape.empty(); ++d) {
    const int64_t want = padded_shape[static_cast<size_t>(d)];
    if (want < 0) continue;
    if (want < target[d])
      throw op_error<ShapeError>(
          op, "expected axis ", d, " of every element at most ", want,
          " (the padded shape), got an element of extent ", target[d]);
    target[d] = want;
  }
  std::vector<Tensor> padded;
  padded.reserve(elements.size());
  for (const Tensor& t : elements) {
    Tensor p = t;
    for (int64_t d = 0; d < rank; ++d) {
      if (p.dim(d) == target[d]) continue;
      Shape fill_shape = p.shape();
      fill_shape[d] = target[d] - p.dim(d);
      // Text pads with "" (a string tensor's zero), numbers with `value`.
      const Tensor pad = is_string(t.dtype())
                             ? empty(fill_shape, string_, t.device())
                             : full(fill_shape, value, t.dtype(), t.device());
      p = concat({p, pad}, d);
    }
    padded.push_back(std::move(p));
  }
  return stack(padded, op);
}

}  // namespace detail

}  // namespace tapeflow::data
