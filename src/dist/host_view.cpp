#include "dist/host_view.hpp"

#include <cstring>

#include "core/creation_internal.hpp"
#include "core/op_error.hpp"

namespace tapeflow::dist::detail {

void check_defined(const Tensor& t, const char* op) {
  if (!t.defined())
    throw op_error<ValueError>(op,
                               "expected a defined tensor, got an empty one");
  if (is_string(t.dtype()))  // text is objects, not bytes MPI can move
    throw op_error<DTypeError>(op, "expected a numeric tensor, got string");
}

void check_peer(int rank, int size, int self, bool not_self, const char* op,
                const char* what) {
  if (rank < 0 || rank >= size)
    throw op_error<ValueError>(op, "expected a ", what, " rank in [0, ", size,
                               "), got ", rank);
  if (not_self && rank == self)
    throw op_error<ValueError>(op, "expected a ", what,
                               " rank other than this rank (", self, ")");
}

bool writable(const Tensor& t) {
  for (int64_t d = 0; d < t.rank(); ++d)
    if (t.strides()[d] == 0 && t.shape()[d] > 1) return false;
  return true;
}

void check_writable(const Tensor& t, const char* op) {
  if (!writable(t))
    throw op_error<ValueError>(
        op, "expected a tensor whose elements have memory of their own, got a ",
        "broadcast view of shape ", t.shape().str(), " (a stride of 0)");
}

HostView host_view(const Tensor& t, const char* op, bool writes) {
  if (writes) check_writable(t, op);
  HostView v;
  v.tensor = t;
  if (t.device() == Device::cpu() && t.is_contiguous()) {
    v.host = writes ? begin_in_place_write(t, true, op) : held(t);
    return v;
  }
  v.host = materialize(t.to(Device::cpu()));
  v.staged = true;
  return v;
}

Tensor host_clone(const Tensor& t) {
  const Tensor src = materialize(t.to(Device::cpu()));
  const Tensor out = empty_tensor(t.shape(), t.dtype(), Device::cpu(), "copy");
  if (t.numel() > 0)
    std::memcpy(out.raw_data(), src.raw_data(),
                static_cast<size_t>(t.numel()) * itemsize(t.dtype()));
  return out;
}

void write_back(const HostView& v, const char* op) {
  if (v.staged) write_into(v.tensor, v.host.to(v.tensor.device()), op);
}

}  // namespace tapeflow::dist::detail
