// DLPack 0.6 exchange (tapeflow/dlpack.hpp): both directions share memory;
// ownership travels with the DLManagedTensor's deleter.
#include "tapeflow/dlpack.hpp"

#include <dlpack/dlpack.h>

#include <array>
#include <exception>
#include <memory>
#include <string>

#include "core/checked.hpp"
#include "core/cpu_allocator.hpp"
#include "core/creation_internal.hpp"
#include "core/op_error.hpp"
#include "core/variable_lock.hpp"

namespace tapeflow {
namespace {

// DLPack 0.8's bool code, which 0.6's header lacks; newer producers (PyTorch
// 2.x) use it for bool tensors.
constexpr uint8_t kDLBoolSince08 = 6;

/** What an exported DLManagedTensor owns: the buffer and its own arrays. */
struct Export {
  std::shared_ptr<Storage> storage;  // not the TensorImpl: copy on write
                                     // replaces a Variable's storage there
  Shape shape;
  Shape strides;
  DLManagedTensor managed{};
};

void delete_export(DLManagedTensor* self) {
  delete static_cast<Export*>(self->manager_ctx);
}

DLDataType dl_dtype_of(DType dtype) {
  switch (dtype) {
    case DType::bool_:
      return {kDLUInt, 8, 1};
    case DType::int32:
      return {kDLInt, 32, 1};
    case DType::int64:
      return {kDLInt, 64, 1};
    case DType::float32:
      return {kDLFloat, 32, 1};
    case DType::float64:
      return {kDLFloat, 64, 1};
    case DType::string_:
      break;
  }
  throw op_error<DTypeError>(
      "to_dlpack",
      "expected a dtype DLPack can express (bool, int32, int64, float32, "
      "float64), got ",
      dtype_name(dtype));
}

/** "float16", "bfloat16", "uint8x4": a DLPack type as messages name it. */
std::string dl_dtype_name(DLDataType t) {
  static const char* const codes[] = {"int",    "uint",    "float", "handle",
                                      "bfloat", "complex", "bool"};
  std::string name = t.code < std::size(codes)
                         ? codes[t.code]
                         : "code" + std::to_string(t.code) + "_";
  name += std::to_string(t.bits);
  if (t.lanes != 1) name += "x" + std::to_string(t.lanes);
  return name;
}

DType dtype_of_dl(DLDataType t) {
  if (t.lanes == 1) {
    if (t.code == kDLInt && t.bits == 32) return DType::int32;
    if (t.code == kDLInt && t.bits == 64) return DType::int64;
    if (t.code == kDLFloat && t.bits == 32) return DType::float32;
    if (t.code == kDLFloat && t.bits == 64) return DType::float64;
    if ((t.code == kDLUInt || t.code == kDLBoolSince08) && t.bits == 8)
      return DType::bool_;
  }
  throw op_error<DTypeError>(
      "from_dlpack",
      "expected int32, int64, float32, float64, or uint8/bool (read as "
      "bool), got ",
      dl_dtype_name(t));
}

Device device_of_dl(DLDevice d) {
  switch (d.device_type) {
    case kDLCPU:
    case kDLCUDAHost:
    case kDLCUDAManaged:
      return Device::cpu();
    case kDLCUDA:
      if (d.device_id < 0 || d.device_id > INT16_MAX)
        throw op_error<DeviceError>("from_dlpack",
                                    "expected a device index in [0, 32767], "
                                    "got ",
                                    d.device_id);
      return Device::cuda(d.device_id);
    default:
      throw op_error<DeviceError>(
          "from_dlpack",
          "expected device type kDLCPU (1), kDLCUDA (2), kDLCUDAHost (3) or "
          "kDLCUDAManaged (13), got ",
          static_cast<int>(d.device_type));
  }
}

/**
 * The allocator of one adopted buffer: Storage takes memory from an
 * allocator and gives it back, so this one hands out the producer's memory
 * once and, given it back, calls the producer's deleter and goes away.
 */
class AdoptedBuffer final : public Allocator {
 public:
  AdoptedBuffer(void* data, DLManagedTensor* managed, Device device)
      : data_(data), managed_(managed), device_(device) {}
  void* allocate(size_t) override { return data_; }
  void deallocate(void*, size_t) override {
    // Kernels queued on the GPU may still use the memory, which the
    // producer may reuse at once: wait for them. Called from a destructor,
    // so the kernels' data errors stay for the next synchronize, and a failed
    // wait (a sticky CUDA error, which the next call raises again) is let go.
    if (!device_.is_cpu()) {
      try {
        checked_backend(device_, "from_dlpack")->wait_idle(device_.index);
      } catch (const std::exception&) {
      }
    }
    if (managed_->deleter) managed_->deleter(managed_);
    delete this;
  }
  MemoryStats stats() const override { return {}; }
  void empty_cache() override {}

 private:
  void* data_;
  DLManagedTensor* managed_;
  Device device_;
};

/** The shape, checked (rank, non-negative extents). */
Shape shape_of_dl(const DLTensor& t) {
  if (t.ndim < 0 || t.ndim > kMaxRank)
    throw op_error<ValueError>("from_dlpack", "expected a rank in [0, ",
                               kMaxRank, "], got ", t.ndim);
  if (t.ndim > 0 && !t.shape)
    throw op_error<ValueError>("from_dlpack", "expected ", t.ndim,
                               " extents for rank ", t.ndim,
                               ", got a null shape");
  Shape shape;
  for (int i = 0; i < t.ndim; ++i) {
    if (t.shape[i] < 0)
      throw op_error<ValueError>("from_dlpack",
                                 "expected non-negative extents, got ",
                                 t.shape[i], " along axis ", i);
    shape.push_back(t.shape[i]);
  }
  return shape;
}

/** The strides (contiguous when absent), checked non-negative. */
Shape strides_of_dl(const DLTensor& t, const Shape& shape) {
  if (!t.strides) return contiguous_strides(shape);
  Shape strides;
  for (int i = 0; i < t.ndim; ++i) {
    if (t.strides[i] < 0)
      throw op_error<ValueError>(
          "from_dlpack", "expected non-negative strides, got ", t.strides[i],
          " along axis ", i, " (copy a reversed view before exporting it)");
    strides.push_back(t.strides[i]);
  }
  return strides;
}

/** Elements from the first to one past the last one the view reaches. */
int64_t extent_of(const Shape& shape, const Shape& strides) {
  int64_t last = 0;
  for (int64_t i = 0; i < shape.size(); ++i)
    last = checked_add(last,
                       checked_mul(shape[i] - 1, strides[i], "from_dlpack",
                                   "the view's extent"),
                       "from_dlpack", "the view's extent");
  return checked_add(last, 1, "from_dlpack", "the view's extent");
}

/**
 * bool_ holds 0 or 1 only: refuses other uint8 values of the view over
 * host memory `data`, visited in row-major order.
 */
void check_bool_bytes(const uint8_t* data, const Shape& shape,
                      const Shape& strides, int64_t numel) {
  std::array<int64_t, kMaxRank> index{};
  for (int64_t n = 0; n < numel; ++n) {
    int64_t at = 0;
    for (int64_t i = 0; i < shape.size(); ++i) at += index[i] * strides[i];
    if (data[at] > 1)
      throw op_error<ValueError>(
          "from_dlpack",
          "expected uint8 values 0 or 1 (tapeflow reads 8-bit unsigned as "
          "bool), got ",
          static_cast<int>(data[at]), " at element ", n);
    for (int64_t i = shape.size() - 1; i >= 0 && ++index[i] == shape[i]; --i)
      index[i] = 0;
  }
}

}  // namespace

DLManagedTensor* to_dlpack(const Tensor& t) {
  if (!t.defined())
    throw op_error<ValueError>("to_dlpack",
                               "expected a defined tensor, got an empty one");
  const DLDataType dtype = dl_dtype_of(t.dtype());
  // DLPack 0.6 carries no stream: the consumer may read the memory at once
  // on any stream, so the kernels writing it must be done.
  const Device device = t.device();
  if (!device.is_cpu())
    checked_backend(device, "to_dlpack")->synchronize(device.index);
  const TensorImpl& impl = *t.impl();
  auto e = std::make_unique<Export>();
  e->storage = storage_of(impl);
  e->shape = impl.shape;
  e->strides = impl.strides;
  DLTensor& dl = e->managed.dl_tensor;
  dl.data = e->storage->data();
  dl.device = {device.is_cpu() ? kDLCPU : kDLCUDA,
               device.is_cpu() ? 0 : device.index};
  dl.ndim = static_cast<int>(e->shape.size());
  dl.dtype = dtype;
  dl.shape = e->shape.begin();
  dl.strides = e->strides.begin();
  dl.byte_offset = static_cast<uint64_t>(impl.offset) * itemsize(impl.dtype);
  e->managed.manager_ctx = e.get();
  e->managed.deleter = delete_export;
  return &e.release()->managed;
}

Tensor from_dlpack(DLManagedTensor* managed) {
  if (!managed)
    throw op_error<ValueError>("from_dlpack",
                               "expected a DLManagedTensor, got null");
  const DLTensor& dl = managed->dl_tensor;
  const DType dtype = dtype_of_dl(dl.dtype);
  const Device device = device_of_dl(dl.device);
  const Shape shape = shape_of_dl(dl);
  const Shape strides = strides_of_dl(dl, shape);
  if (!device.is_cpu()) checked_backend(device, "from_dlpack");
  const int64_t numel = checked_numel(shape, "from_dlpack");
  if (numel == 0) {
    Tensor empty = empty_tensor(shape, dtype, device, "from_dlpack");
    if (managed->deleter) managed->deleter(managed);
    return empty;
  }
  const int64_t bytes = checked_mul(extent_of(shape, strides),
                                    static_cast<int64_t>(itemsize(dtype)),
                                    "from_dlpack", "the view's byte size");
  if (!dl.data)
    throw op_error<ValueError>("from_dlpack", "expected data for ", numel,
                               " elements, got a null pointer");
  // The view's bytes must lie within the address space: an offset that
  // wraps the pointer around points before the buffer.
  uintptr_t start = 0;
  if (__builtin_add_overflow(reinterpret_cast<uintptr_t>(dl.data),
                             dl.byte_offset, &start) ||
      start > UINTPTR_MAX - static_cast<uint64_t>(bytes))
    throw op_error<ValueError>("from_dlpack", "expected data + byte_offset + ",
                               bytes,
                               " bytes within the address space, got data ",
                               reinterpret_cast<uintptr_t>(dl.data),
                               " and byte_offset ", dl.byte_offset);
  void* data = reinterpret_cast<void*>(start);
  // Kernels read T through T*: a start between two elements is no T there.
  if (reinterpret_cast<uintptr_t>(data) % itemsize(dtype) != 0)
    throw op_error<ValueError>(
        "from_dlpack", "expected data + byte_offset aligned to the item size ",
        itemsize(dtype), ", got an address ",
        reinterpret_cast<uintptr_t>(data) % itemsize(dtype),
        " bytes past it (byte_offset ", dl.byte_offset, ")");
  if (dtype == DType::bool_ && device.is_cpu())
    check_bool_bytes(static_cast<const uint8_t*>(data), shape, strides, numel);
  auto owner = std::make_unique<AdoptedBuffer>(data, managed, device);
  auto base_impl = std::make_shared<TensorImpl>();
  base_impl->set_storage(std::make_shared<Storage>(static_cast<size_t>(bytes),
                                                   device, owner.get()));
  owner.release();  // the storage gives it back when it goes
  base_impl->shape = Shape{bytes / static_cast<int64_t>(itemsize(dtype))};
  base_impl->strides = Shape{1};
  base_impl->dtype = dtype;
  return make_view(Tensor(std::move(base_impl)), shape, strides, 0);
}

}  // namespace tapeflow
