#include "tapeflow/core/tensor.hpp"

#include <cstring>
#include <memory>
#include <string>
#include <string_view>

#include "core/checked.hpp"
#include "core/cpu_allocator.hpp"
#include "core/creation_internal.hpp"
#include "core/op_error.hpp"
#include "core/variable_lock.hpp"
#include "profiler/hook.hpp"

namespace tapeflow {
namespace {

void destroy_strings(void* data, size_t nbytes) {
  std::destroy_n(static_cast<std::string*>(data), nbytes / sizeof(std::string));
}

}  // namespace

Tensor empty_tensor(const Shape& shape, DType dtype, Device device,
                    const char* op) {
  const int64_t bytes =
      checked_mul(checked_numel(shape, op),
                  static_cast<int64_t>(itemsize(dtype)), op, "its byte size");
  if (dtype == string_ && !device.is_cpu())
    throw op_error<DeviceError>(
        op, "expected the CPU for a string tensor, got ", device.str());
  std::shared_ptr<TensorImpl> impl = new_tensor_impl();
  Allocator* allocator = allocator_for(device, op);
  try {
    impl->set_storage(std::allocate_shared<Storage>(
        SmallBlockAllocator<Storage>(), static_cast<size_t>(bytes), device,
        allocator));
  } catch (const std::bad_alloc&) {
    throw op_error<ResourceExhaustedError>(
        op, "expected ", bytes, " bytes for a ", dtype_name(dtype),
        " tensor of shape ", shape.str(), " on ", device.str(),
        ", got an allocation failure (out of memory)");
  } catch (const ResourceExhaustedError& e) {
    // A device arena's "[allocate] ..." says what it holds; the op goes first.
    constexpr std::string_view arena = "[allocate] ";
    std::string_view what = e.what();
    if (what.starts_with(arena)) what.remove_prefix(arena.size());
    throw op_error<ResourceExhaustedError>(op, what);
  }
  if (profiler::detail::g_running.load(std::memory_order_relaxed)) [[unlikely]]
    profiler::detail::note_allocation(bytes);
  if (dtype == string_ && bytes > 0) {
    // Every element a live (empty) std::string until the storage goes: the
    // allocator's cache hands back dirty memory.
    std::uninitialized_default_construct_n(
        static_cast<std::string*>(impl->storage->data()),
        bytes / sizeof(std::string));
    impl->storage->set_finalizer(destroy_strings);
  }
  impl->shape = shape;
  impl->strides = shape;
  extents_to_contiguous_strides(impl->strides);
  impl->dtype = dtype;
  return Tensor(std::move(impl));
}

Tensor make_view(const Tensor& base, const Shape& shape, const Shape& strides,
                 int64_t offset) {
  return make_view(storage_of(*base.impl()), base.dtype(), shape, strides,
                   offset);
}

Tensor make_view(std::shared_ptr<Storage> buffer, DType dtype,
                 const Shape& shape, const Shape& strides, int64_t offset) {
  std::shared_ptr<TensorImpl> impl = new_tensor_impl();
  impl->set_storage(std::move(buffer));
  impl->shape = shape;
  impl->strides = strides;
  // Unsigned: a broadcast view of 2^63-1 rows overflows the product, which
  // then only needs to differ from the strides (a view that large is
  // contiguous only when empty).
  uint64_t expected = 1;
  for (int64_t i = shape.size() - 1; i >= 0; --i) {
    if (shape[i] != 1 && strides[i] != static_cast<int64_t>(expected))
      impl->contiguous = false;
    expected *= static_cast<uint64_t>(shape[i]);
  }
  impl->offset = offset;
  impl->dtype = dtype;
  return Tensor(std::move(impl));
}

void Tensor::throw_undefined() {
  throw ValueError("[tensor] expected a defined tensor, got an empty handle");
}

void Tensor::check_dtype(DType t, const char* op) const {
  if (dtype() != t)
    throw op_error<DTypeError>(op, "expected dtype ", dtype_name(t), ", got ",
                               dtype_name(dtype()));
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
  std::vector<Out> out;
  try {
    out.resize(static_cast<size_t>(h.numel()));
  } catch (const std::bad_alloc&) {
    throw op_error<ResourceExhaustedError>(
        "to_vector", "expected ", h.numel(), " host values of ", sizeof(Out),
        " bytes for shape ", h.shape().str(),
        ", got an allocation failure (out of memory)");
  }
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
    case DType::string_:
      throw op_error<DTypeError>(
          "to_vector",
          "expected a numeric tensor, got string (to_strings() "
          "reads its text)");
  }
  return out;
}

}  // namespace

std::vector<std::string> Tensor::to_strings() const {
  if (dtype() != string_)
    throw op_error<DTypeError>("to_strings", "expected a string tensor, got ",
                               dtype_name(dtype()));
  const Tensor h = materialize(*this);
  const auto* p = static_cast<const std::string*>(h.raw_data());
  return std::vector<std::string>(p, p + h.numel());
}

namespace {
template <class V>
[[noreturn]] void throw_past_integer(V v, size_t bytes, bool is_signed) {
  throw op_error<ValueError>("to_vector", "expected values a ", 8 * bytes,
                             "-bit ", is_signed ? "signed" : "unsigned",
                             " integer can hold, got ", v);
}
}  // namespace

void Tensor::throw_unrepresentable(double v, size_t bytes, bool is_signed) {
  throw_past_integer(v, bytes, is_signed);
}
void Tensor::throw_unrepresentable(int64_t v, size_t bytes, bool is_signed) {
  throw_past_integer(v, bytes, is_signed);
}

std::vector<double> Tensor::host_doubles() const {
  return host_values<double>(*this);
}
std::vector<int64_t> Tensor::host_int64s() const {
  return host_values<int64_t>(*this);
}

}  // namespace tapeflow
