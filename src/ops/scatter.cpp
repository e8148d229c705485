// gather_nd, scatter_nd, tensor_scatter_nd_add and _update, and the segment
// sums: composites of gather and gather_grad (the scatter-add), over the
// indexed shape's rows (prod(shape[:k]),) + shape[k:]. The tuples are checked
// and turned into row numbers on the host, axis by axis: a tuple's flat row
// alone could be in range where one of its indices is not.
#include "tapeflow/ops/scatter.hpp"

#include <algorithm>
#include <span>
#include <vector>

#include "core/checked.hpp"
#include "core/op_error.hpp"
#include "ops/apply.hpp"
#include "ops/composite.hpp"
#include "ops/shape_ops.hpp"
#include "tapeflow/creation.hpp"
#include "tapeflow/ops/math.hpp"
#include "tapeflow/ops/shape.hpp"

namespace tapeflow {
namespace {

/** Index tuples as row numbers of the indexed shape's first `depth` axes. */
struct Rows {
  // int64 on the CPU, one per tuple: a tensor, so that a count of tuples no
  // allocator has ((2^50, 0) indices) is the allocator's error.
  Tensor rows;
  Shape tuples;       // indices.shape[:-1]
  int64_t depth = 0;  // k
  Shape row_shape;    // (prod(shape[:k]),) + shape[k:]

  Tensor on(Device device) const { return rows.to(device); }
  std::span<const int64_t> values() const {
    return {rows.data<int64_t>(), static_cast<size_t>(rows.numel())};
  }
  /** The shape of the slices the tuples pick: tuples + shape[k:]. */
  Shape slices() const {
    Shape s = tuples;
    for (int64_t i = 1; i < row_shape.size(); ++i) s.push_back(row_shape[i]);
    return s;
  }
};

Rows rows_of(const Tensor& indices, const Shape& shape, const char* op) {
  if (!indices.defined() || !is_integral(indices.dtype()))
    throw op_error<DTypeError>(
        op, "expected int32 or int64 indices, got ",
        indices.defined() ? dtype_name(indices.dtype()) : "an empty handle");
  if (indices.rank() == 0)
    throw op_error<ShapeError>(op,
                               "expected indices of rank >= 1 (a tuple along "
                               "the last axis), got shape ()");
  checked_numel(shape, op);
  Rows r;
  r.depth = indices.shape().back();
  if (r.depth > shape.size())
    throw op_error<ShapeError>(op, "expected tuples of at most ", shape.size(),
                               " indices into shape ", shape.str(), ", got ",
                               r.depth, " (indices ", indices.shape().str(),
                               ")");
  r.tuples = Shape(indices.shape().begin(), indices.shape().end() - 1);
  int64_t lead = 1;
  for (int64_t i = 0; i < r.depth; ++i) lead *= shape[i];
  r.row_shape = {lead};
  for (int64_t i = r.depth; i < shape.size(); ++i)
    r.row_shape.push_back(shape[i]);
  const std::vector<int64_t> v = indices.to_vector<int64_t>();
  r.rows = empty(r.tuples, int64, Device::cpu());
  int64_t* rows = r.rows.data<int64_t>();
  for (int64_t t = 0; t < r.tuples.numel(); ++t) {
    int64_t row = 0;
    for (int64_t a = 0; a < r.depth; ++a) {
      const int64_t at = v[t * r.depth + a];
      if (at < 0 || at >= shape[a])
        throw op_error<IndexError>(op, "expected index ", a, " of tuple ", t,
                                   " in [0, ", shape[a], ") for shape ",
                                   shape.str(), ", got ", at);
      row = row * shape[a] + at;
    }
    rows[t] = row;
  }
  return r;
}

void check_updates(const Tensor& updates, const Rows& r, const char* op) {
  if (!updates.defined())
    throw op_error<ValueError>(op,
                               "expected defined updates, got an empty "
                               "handle");
  if (!(updates.shape() == r.slices()))
    throw op_error<ShapeError>(
        op, "expected updates of shape ", r.slices().str(),
        " (a slice per index tuple), got ", updates.shape().str());
}

/** Zeros of `row_shape` with each update slice added at its row. */
Tensor scatter_rows(const Shape& row_shape, const Tensor& row_numbers,
                    const Tensor& updates) {
  return apply(GatherGrad{0, row_shape}, {row_numbers, updates});
}

/** The tensor's and the updates' dtypes agree (no promotion into tensor). */
void check_same_dtype(const Tensor& tensor, const Tensor& updates,
                      const char* op) {
  if (!tensor.defined() || !updates.defined() ||
      tensor.dtype() != updates.dtype())
    throw op_error<DTypeError>(
        op, "expected updates of the tensor's dtype ",
        tensor.defined() ? dtype_name(tensor.dtype()) : "(none)", ", got ",
        updates.defined() ? dtype_name(updates.dtype()) : "(none)");
}

/** Which of `rows` hold each row's last tuple (positions, ascending row). */
std::vector<int64_t> last_of_each_row(std::span<const int64_t> rows) {
  std::vector<int64_t> order(rows.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = int64_t(i);
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t a, int64_t b) { return rows[a] < rows[b]; });
  std::vector<int64_t> last;
  for (size_t i = 0; i < order.size(); ++i)
    if (i + 1 == order.size() || rows[order[i + 1]] != rows[order[i]])
      last.push_back(order[i]);
  return last;
}

}  // namespace

Tensor gather_nd(const Tensor& params, const Tensor& indices) {
  return composite("gather_nd", [&] {
    if (!params.defined())
      throw op_error<ValueError>("gather_nd",
                                 "expected defined params, got an empty "
                                 "handle");
    const Rows r = rows_of(indices, params.shape(), "gather_nd");
    return gather(reshape(params, r.row_shape), r.on(params.device()), 0);
  });
}

Tensor scatter_nd(const Tensor& indices, const Tensor& updates,
                  const Shape& shape) {
  return composite("scatter_nd", [&] {
    const Rows r = rows_of(indices, shape, "scatter_nd");
    check_updates(updates, r, "scatter_nd");
    return reshape(scatter_rows(r.row_shape, r.on(updates.device()), updates),
                   shape);
  });
}

Tensor tensor_scatter_nd_add(const Tensor& tensor, const Tensor& indices,
                             const Tensor& updates) {
  return composite("tensor_scatter_nd_add", [&] {
    check_same_dtype(tensor, updates, "tensor_scatter_nd_add");
    return tensor + scatter_nd(indices, updates, tensor.shape());
  });
}

Tensor tensor_scatter_nd_update(const Tensor& tensor, const Tensor& indices,
                                const Tensor& updates) {
  return composite("tensor_scatter_nd_update", [&] {
    constexpr const char* op = "tensor_scatter_nd_update";
    check_same_dtype(tensor, updates, op);
    const Rows r = rows_of(indices, tensor.shape(), op);
    check_updates(updates, r, op);
    const std::vector<int64_t> kept = last_of_each_row(r.values());
    std::vector<int64_t> kept_rows;
    for (int64_t i : kept) kept_rows.push_back(r.values()[i]);
    const Device device = tensor.device();
    const Shape kept_shape{static_cast<int64_t>(kept.size())};
    Shape update_rows = r.row_shape;  // one row per tuple
    update_rows[0] = r.rows.numel();
    const Tensor rows_at =
        from_buffer(kept_rows.data(), kept_shape, int64, device);
    const Tensor kept_updates =
        gather(reshape(updates, update_rows),
               from_buffer(kept.data(), kept_shape, int64, device), 0);
    const Tensor replaced = scatter_rows(r.row_shape, rows_at, kept_updates);
    // Whether an update lands in each row, broadcast along the row.
    const Tensor hits = scatter_rows(Shape{r.row_shape[0]}, rows_at,
                                     ones(kept_shape, int32, device));
    Shape mask_shape = r.row_shape;
    for (int64_t i = 1; i < mask_shape.size(); ++i) mask_shape[i] = 1;
    const Tensor mask =
        reshape(not_equal(hits, scalar(0, int32, device)), mask_shape);
    return reshape(where(mask, replaced, reshape(tensor, r.row_shape)),
                   tensor.shape());
  });
}

Tensor unsorted_segment_sum(const Tensor& data, const Tensor& segment_ids,
                            int64_t num_segments) {
  return composite("unsorted_segment_sum", [&] {
    constexpr const char* op = "unsorted_segment_sum";
    if (!data.defined())
      throw op_error<ValueError>(op,
                                 "expected defined data, got an empty handle");
    if (!segment_ids.defined() || !is_integral(segment_ids.dtype()))
      throw op_error<DTypeError>(
          op, "expected int32 or int64 segment ids, got ",
          segment_ids.defined() ? dtype_name(segment_ids.dtype())
                                : "an empty handle");
    if (num_segments < 0)
      throw op_error<ValueError>(op, "expected num_segments >= 0, got ",
                                 num_segments);
    const Shape& ids = segment_ids.shape();
    const bool prefix =
        ids.size() <= data.rank() &&
        std::equal(ids.begin(), ids.end(), data.shape().begin());
    if (!prefix)
      throw op_error<ShapeError>(op, "expected segment ids whose shape ",
                                 ids.str(), " begins data's shape, got data ",
                                 data.shape().str());
    // One tuple of depth 1 per id, into (num_segments,) + data.shape[ids:].
    Shape out{num_segments};
    for (int64_t i = ids.size(); i < data.rank(); ++i)
      out.push_back(data.shape()[i]);
    Shape id_tuples = ids;
    id_tuples.push_back(1);
    return scatter_nd(reshape(segment_ids, id_tuples), data, out);
  });
}

Tensor segment_sum(const Tensor& data, const Tensor& segment_ids) {
  return composite("segment_sum", [&] {
    if (!segment_ids.defined() || segment_ids.rank() != 1)
      throw op_error<ShapeError>(
          "segment_sum", "expected 1-D segment ids, got shape ",
          segment_ids.defined() ? segment_ids.shape().str() : "(none)");
    const std::vector<int64_t> ids = is_integral(segment_ids.dtype())
                                         ? segment_ids.to_vector<int64_t>()
                                         : std::vector<int64_t>{};
    for (size_t i = 1; i < ids.size(); ++i)
      if (ids[i] < ids[i - 1])
        throw op_error<ValueError>("segment_sum",
                                   "expected segment ids sorted ascending, "
                                   "got ",
                                   ids[i], " after ", ids[i - 1],
                                   " at position ", i);
    const int64_t count =
        ids.empty() ? 0 : std::max<int64_t>(ids.back(), -1) + 1;
    return unsorted_segment_sum(data, segment_ids, count);
  });
}

}  // namespace tapeflow
