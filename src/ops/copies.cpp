// Copies: to contiguous memory, into an existing tensor, to another device.
// All of them are Cast kernels (a same-dtype cast is a strided copy) or
// backend transfers.
#include <thread>

#include "core/cpu_allocator.hpp"
#include "core/op_error.hpp"
#include "core/small_block_pool.hpp"
#include "core/variable_lock.hpp"
#include "ops/apply.hpp"
#include "ops/elementwise_ops.hpp"
#include "tapeflow/autograd.hpp"
#include "tapeflow/config.hpp"
#include "tapeflow/ops/math.hpp"

namespace tapeflow {

Tensor Tensor::contiguous() const {
  if (is_contiguous()) return *this;
  return apply(Cast{.dtype = dtype()}, {*this});
}

Tensor materialize(const Tensor& x) {
  if (x.is_contiguous()) return held(x);
  NoGradGuard no_grad;
  return apply(Cast{.dtype = x.dtype()}, {x});
}

namespace {

/**
 * Runs the Cast kernel from `src`, broadcast to dst's shape, into `dst`. A
 * device without one (soft placement on) gets the CPU's result copied into
 * a contiguous `dst`, as any op without a kernel there would.
 */
void cast_into(const Tensor& dst, const Tensor& src, const char* op) {
  const Kernel<Cast> k = find_kernel<Cast>(dst.device());
  if (!k && config::soft_placement() && dst.is_contiguous() &&
      !dst.device().is_cpu()) {
    const Tensor host =
        empty_tensor(dst.shape(), dst.dtype(), Device::cpu(), op);
    cast_into(host, src.cpu(), op);
    checked_backend(dst.device(), op)
        ->copy_from_host(host.raw_data(), dst.raw_data(),
                         host.numel() * itemsize(host.dtype()),
                         dst.device().index);
    return;
  }
  if (!k) throw_no_kernel(op, dst.device());
  NoGradGuard no_grad;
  Tensor out = dst;
  const Tensor in[] = {broadcast_to(held(src), dst.shape())};
  k(Cast{.dtype = dst.dtype()}, Inputs(in, 1), Outputs({&out, 1}, nullptr));
}

}  // namespace

Tensor begin_in_place_write(const Tensor& dst, bool keeps_values,
                            const char* op) {
  TensorImpl& impl = *dst.impl();
  if (!impl.variable) {
    impl.storage->bump_version();
    return dst;
  }
  std::unique_lock lock(variable_lock(impl));
  std::shared_ptr<Storage> buffer = impl.storage;
  // Others hold this buffer besides the Variable and `buffer`: a tape node
  // that saved the Variable, a view of it, a converted copy's source. They
  // keep the values they saw and the Variable moves to a fresh buffer (copy
  // on write).
  if (buffer.use_count() > 2) {
    const Tensor fresh =
        empty_tensor(dst.shape(), dst.dtype(), dst.device(), op);
    if (keeps_values)
      cast_into(fresh,
                make_view(buffer, dst.dtype(), dst.shape(), dst.strides(),
                          dst.offset()),
                op);
    buffer = fresh.impl()->storage;
    impl.replace_storage(buffer);
  }
  buffer->bump_version();
  buffer->begin_write();
  lock.unlock();
  // The writer's view owns the buffer through a token that counts the write
  // finished when the last handle onto it goes, whatever path the writer
  // takes out (a kernel that throws included).
  struct WriteToken {
    explicit WriteToken(std::shared_ptr<Storage> b) : buffer(std::move(b)) {}
    WriteToken(const WriteToken&) = delete;
    WriteToken& operator=(const WriteToken&) = delete;
    ~WriteToken() { buffer->end_write(); }
    std::shared_ptr<Storage> buffer;
  };
  auto token = std::allocate_shared<WriteToken>(
      SmallBlockAllocator<WriteToken>(), std::move(buffer));
  Storage* const raw = token->buffer.get();
  return make_view(std::shared_ptr<Storage>(std::move(token), raw), dst.dtype(),
                   dst.shape(), dst.strides(), dst.offset());
}

Tensor snapshot(const Tensor& t) {
  if (!t.defined() || !t.impl()->variable) return t;
  Tensor view;
  {
    const std::lock_guard lock(variable_lock(*t.impl()));
    view = make_view(t.impl()->storage, t.dtype(), t.shape(), t.strides(),
                     t.offset());
  }
  // Writes that begin from here on find the buffer held and move the
  // Variable to a fresh one; those already under way finish in a kernel.
  const Storage& buffer = *view.impl()->storage;
  while (buffer.writers() != 0) std::this_thread::yield();
  return view;
}

void move_variable(const Tensor& v, Device device) {
  if (v.device() == device) return;
  // A Variable owns its whole, contiguous buffer: its copy is the same view.
  const Tensor moved = v.to(device);
  const std::lock_guard lock(variable_lock(*v.impl()));
  v.impl()->replace_storage(moved.impl()->storage);
}

void write_into(const Tensor& dst, const Tensor& src, const char* op) {
  if (!(dst.device() == src.device()))
    throw op_error<DeviceError>(op, "expected a value on ", dst.device().str(),
                                ", got ", src.device().str());
  if (src.is_same(dst)) return;  // the values are already there
  const Tensor source = held(src);
  const Tensor target = begin_in_place_write(dst, false, op);
  if (source.impl()->storage != target.impl()->storage) {
    cast_into(target, source, op);
    return;
  }
  // The source is another view of the buffer being written (its transpose,
  // a shifted slice): read all of it before any element is overwritten.
  const Tensor whole = empty_tensor(src.shape(), src.dtype(), src.device(), op);
  cast_into(whole, source, op);
  cast_into(target, whole, op);
}

Tensor Tensor::to(Device device) const {
  if (device == this->device()) return *this;
  if (is_string(dtype()))
    throw op_error<DeviceError>("to",
                                "expected the CPU for a string tensor, "
                                "got ",
                                device.str(), " (strings stay on the host)");
  return apply_view(ToDevice{device}, *this);
}

namespace {

/**
 * Host copy of a strided device view: the storage span it covers comes over
 * in one transfer and the view's strides are applied on the host, so devices
 * need no strided-copy kernel.
 */
Tensor strided_to_host(const Tensor& x) {
  int64_t last = 0;
  for (int64_t i = 0; i < x.rank(); ++i)
    last += (x.shape()[i] - 1) * x.strides()[i];
  const int64_t span = last + 1;
  Tensor host = empty_tensor({span}, x.dtype(), Device::cpu());
  const size_t item = itemsize(x.dtype());
  checked_backend(x.device(), "to")
      ->copy_to_host(static_cast<const char*>(x.impl()->storage->data()) +
                         x.offset() * item,
                     host.raw_data(), span * item, x.device().index);
  return materialize(make_view(host, x.shape(), x.strides(), 0));
}

}  // namespace

Tensor ToDevice::view(const Tensor& x) const {
  if (!device.is_cpu()) checked_backend(device, name);  // errors name "to"
  // Nothing to copy nor to lay out (and no kernel to ask for on a device
  // that would soft-place the copy back here).
  if (x.numel() == 0)
    return x.device() == device ? x
                                : empty_tensor(x.shape(), x.dtype(), device);
  Tensor src = x;
  if (!x.is_contiguous() && !x.device().is_cpu())
    src = strided_to_host(x);
  else
    src = materialize(x);
  if (src.device() == device) return src;
  Tensor dst = empty_tensor(src.shape(), src.dtype(), device);
  const size_t bytes = src.numel() * itemsize(src.dtype());
  if (bytes == 0) return dst;
  const Device from = src.device();
  if (from.is_cpu()) {
    checked_backend(device, name)
        ->copy_from_host(src.raw_data(), dst.raw_data(), bytes, device.index);
  } else if (device.is_cpu()) {
    checked_backend(from, name)
        ->copy_to_host(src.raw_data(), dst.raw_data(), bytes, from.index);
  } else if (from.type == device.type) {  // GPU to GPU: a peer copy
    checked_backend(device, name)
        ->copy_between_devices(src.raw_data(), from.index, dst.raw_data(),
                               device.index, bytes);
  } else {  // between two kinds of device, through the host
    std::vector<char> host(bytes);
    checked_backend(from, name)
        ->copy_to_host(src.raw_data(), host.data(), bytes, from.index);
    checked_backend(device, name)
        ->copy_from_host(host.data(), dst.raw_data(), bytes, device.index);
  }
  return dst;
}
Grads ToDevice::vjp(const VjpArgs& a) const {
  return {a.grad.to(a.input_specs[0].device)};
}

Tensor Tensor::cast(DType dtype) const {
  return tapeflow::cast(*this, dtype);
}

}  // namespace tapeflow
