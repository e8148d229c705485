#include "tapeflow/core/tensor.hpp"

#include <cstring>

#include "core/apply.hpp"
#include "core/cpu_allocator.hpp"
#include "core/creation_internal.hpp"
#include "ops/elementwise_ops.hpp"
#include "tapeflow/config.hpp"
#include "tapeflow/ops/math.hpp"

namespace tapeflow {

Tensor empty_tensor(const Shape& shape, DType dtype, Device device) {
  for (int64_t d : shape)
    if (d < 0)
      throw ShapeError("[empty] expected non-negative extents, got shape " +
                       shape.str());
  auto impl = std::make_shared<TensorImpl>();
  const size_t nbytes = static_cast<size_t>(shape.numel()) * itemsize(dtype);
  impl->storage =
      std::make_shared<Storage>(nbytes, device, allocator_for(device, "empty"));
  impl->shape = shape;
  impl->strides = contiguous_strides(shape);
  impl->dtype = dtype;
  return Tensor(std::move(impl));
}

Tensor make_view(const Tensor& base, const Shape& shape, const Shape& strides,
                 int64_t offset) {
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = base.impl()->storage;
  impl->shape = shape;
  impl->strides = strides;
  int64_t expected = 1;
  for (int64_t i = shape.size() - 1; i >= 0; --i) {
    if (shape[i] != 1 && strides[i] != expected) impl->contiguous = false;
    expected *= shape[i];
  }
  impl->offset = offset;
  impl->dtype = base.dtype();
  return Tensor(std::move(impl));
}

void Tensor::throw_undefined() {
  throw ValueError("[tensor] expected a defined tensor, got an empty handle");
}

void Tensor::check_dtype(DType t, const char* op) const {
  if (dtype() != t)
    throw DTypeError(std::string("[") + op + "] expected dtype " +
                     std::string(dtype_name(t)) + ", got " +
                     std::string(dtype_name(dtype())));
}

int64_t Tensor::dim(int64_t i) const {
  const int64_t r = rank();
  if (i < -r || i >= r)
    throw IndexError("[dim] expected an axis in [" + std::to_string(-r) + ", " +
                     std::to_string(r) + "), got " + std::to_string(i));
  return shape()[i < 0 ? i + r : i];
}

namespace {

template <class T, class Out>
void gather_host(const Tensor& host, std::vector<Out>& out) {
  const T* p = static_cast<const T*>(host.raw_data());
  for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<Out>(p[i]);
}

template <class Out>
std::vector<Out> host_values(const Tensor& t) {
  Tensor h = materialize(t.cpu());
  std::vector<Out> out(static_cast<size_t>(h.numel()));
  switch (h.dtype()) {
    case DType::bool_:
      gather_host<uint8_t>(h, out);
      break;
    case DType::int32:
      gather_host<int32_t>(h, out);
      break;
    case DType::int64:
      gather_host<int64_t>(h, out);
      break;
    case DType::float32:
      gather_host<float>(h, out);
      break;
    case DType::float64:
      gather_host<double>(h, out);
      break;
  }
  return out;
}

}  // namespace

std::vector<double> Tensor::host_doubles() const {
  return host_values<double>(*this);
}
std::vector<int64_t> Tensor::host_int64s() const {
  return host_values<int64_t>(*this);
}

Tensor Tensor::to(Device device) const {
  if (device == this->device()) return *this;
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
  Tensor src = x;
  if (x.numel() > 0 && !x.is_contiguous() && !x.device().is_cpu())
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
  } else {  // between two devices, through the host
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

Device common_device(const char* op, Inputs in) {
  if (in.empty()) return Device::cpu();
  const Device d = in[0].device();
  for (size_t i = 1; i < in.size(); ++i) {
    if (!(in[i].device() == d))
      throw DeviceError(std::string("[") + op + "] expected all inputs on " +
                        d.str() + ", got input " + std::to_string(i) + " on " +
                        in[i].device().str());
  }
  return d;
}

void throw_no_kernel(const char* op, Device device) {
  throw DeviceError(std::string("[") + op + "] expected a kernel for " +
                    device.str() + ", got none (soft placement is " +
                    (config::soft_placement() ? "on" : "off") + ")");
}

void run_soft_placed(const char* op, Inputs in, Device device,
                     const std::function<void(Inputs, Outputs)>& cpu_run,
                     std::span<const autograd::TensorSpec> specs,
                     std::span<Tensor> out, PayloadPtr* payload) {
  if (!config::soft_placement()) throw_no_kernel(op, device);
  std::vector<Tensor> host;
  host.reserve(in.size());
  for (const Tensor& t : in) host.push_back(t.cpu());
  std::vector<Tensor> host_out;
  for (const autograd::TensorSpec& s : specs)
    host_out.push_back(empty_tensor(s.shape, s.dtype, Device::cpu()));
  cpu_run(host, Outputs(host_out, payload));
  for (size_t i = 0; i < out.size(); ++i) out[i] = host_out[i].to(device);
}

}  // namespace tapeflow
