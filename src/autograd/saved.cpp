#include "autograd/saved.hpp"

#include "core/creation_internal.hpp"
#include "core/op_error.hpp"

namespace tapeflow::autograd {

namespace {

/**
 * `t` on the buffer its Variable left behind. It carries the Variable's tape
 * marks, so an enclosing tape that records this backward pass (higher
 * order) still sees the Variable it tracks.
 */
Tensor alias_on(const Tensor& t, const std::shared_ptr<Storage>& buffer) {
  const TensorImpl& from = *t.impl();
  std::shared_ptr<TensorImpl> impl = new_tensor_impl();
  impl->set_storage(buffer);
  impl->shape = from.shape;
  impl->strides = from.strides;
  impl->offset = from.offset;
  impl->dtype = from.dtype;
  impl->trainable = from.trainable;
  impl->contiguous = from.contiguous;
  impl->marks.add_all(from.marks);
  return Tensor(std::move(impl));
}

}  // namespace

std::span<const Tensor> as_recorded(const char* op, const char* what,
                                    std::span<const Tensor> saved,
                                    std::span<const SaveStamp> stamps,
                                    std::vector<Tensor>& scratch) {
  bool moved = false;
  for (size_t i = 0; i < saved.size(); ++i) {
    if (!saved[i].defined()) continue;
    const SaveStamp& stamp = stamps[i];
    const std::shared_ptr<Storage> now_held = storage_of(*saved[i].impl());
    const Storage* now = now_held.get();
    const Storage* seen = stamp.pinned ? stamp.pinned.get() : now;
    if (seen->version() != stamp.version)
      throw op_error<ValueError>(
          op, "expected saved ", what, " ", i,
          " to hold the values the op saw (buffer version ", stamp.version,
          "), got version ", seen->version(),
          ": it was modified by an in-place operation since, and only a "
          "Variable keeps the value a tape recorded");
    moved |= seen != now;
  }
  if (!moved) return saved;
  scratch.assign(saved.begin(), saved.end());
  for (size_t i = 0; i < saved.size(); ++i)
    if (stamps[i].pinned && stamps[i].pinned != storage_of(*saved[i].impl()))
      scratch[i] = alias_on(saved[i], stamps[i].pinned);
  return scratch;
}

}  // namespace tapeflow::autograd
