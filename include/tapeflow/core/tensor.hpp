#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <iosfwd>
#include <limits>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "tapeflow/core/device.hpp"
#include "tapeflow/core/dtype.hpp"
#include "tapeflow/core/error.hpp"
#include "tapeflow/core/shape.hpp"
#include "tapeflow/core/tensor_impl.hpp"

namespace tapeflow {

/**
 * A cheap, ref-counted handle to an n-dimensional array on one device.
 * Copies share data; views (reshape, transpose, slice, broadcast_to) share
 * storage with different shape, strides and offset.
 */
class Tensor {
 public:
  /** An undefined tensor (what gradient() returns for unconnected sources). */
  Tensor() = default;
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

  bool defined() const { return impl_ != nullptr; }
  explicit operator bool() const =
      delete;  // use defined(); avoids a + b -> bool

  const Shape& shape() const { return checked().shape; }
  const Shape& strides() const { return checked().strides; }
  int64_t offset() const { return checked().offset; }
  int64_t rank() const { return checked().shape.size(); }
  int64_t numel() const { return checked().shape.numel(); }
  /** Extent of axis `i`; negative counts from the end. */
  int64_t dim(int64_t i) const;
  DType dtype() const { return checked().dtype; }
  Device device() const {
    return checked().device.load(std::memory_order_relaxed);
  }
  bool is_contiguous() const { return checked().contiguous; }
  bool trainable() const { return checked().trainable; }

  /** Pointer to the first element (host memory only for CPU tensors). */
  template <class T>
  T* data() const {
    check_dtype(dtype_of<T>(), "data");
    return static_cast<T*>(raw_data());
  }
  void* raw_data() const {
    const TensorImpl& t = checked();
    return static_cast<char*>(t.storage->data()) +
           t.offset * static_cast<int64_t>(itemsize(t.dtype));
  }

  /** The value of a one-element tensor, converted to T. */
  template <class T>
  T item() const;
  /**
   * Row-major copy of all elements on the host, converted to T; T =
   * std::string reads a string tensor (to_strings()).
   */
  template <class T>
  std::vector<T> to_vector() const;
  /** Row-major copy of a string tensor's elements (DTypeError otherwise). */
  std::vector<std::string> to_strings() const;

  /**
   * A copy on `device`, or this tensor itself where it is already there (as
   * PyTorch's to(): a Variable's handle, which its later assigns change).
   */
  Tensor to(Device device) const;
  Tensor cpu() const { return to(Device::cpu()); }
  /** cast(*this, dtype): a Variable's value as read now, even to its dtype. */
  Tensor cast(DType dtype) const;
  /**
   * This tensor itself if already row-major contiguous (a Variable's handle
   * too, as PyTorch's contiguous()), else a contiguous copy.
   */
  Tensor contiguous() const;

  TensorImpl* impl() const { return impl_.get(); }
  const std::shared_ptr<TensorImpl>& impl_ptr() const { return impl_; }
  /** True when both handles share one TensorImpl (not value equality). */
  bool is_same(const Tensor& other) const { return impl_ == other.impl_; }

 protected:
  const TensorImpl& checked() const {
    if (!impl_) throw_undefined();
    return *impl_;
  }
  [[noreturn]] static void throw_undefined();
  [[noreturn]] static void throw_unrepresentable(double v, size_t bytes,
                                                 bool is_signed);
  [[noreturn]] static void throw_unrepresentable(int64_t v, size_t bytes,
                                                 bool is_signed);
  void check_dtype(DType t, const char* op) const;
  /** Host copy of the elements as float64/int64 in row-major order. */
  std::vector<double> host_doubles() const;
  std::vector<int64_t> host_int64s() const;

  std::shared_ptr<TensorImpl> impl_;
};

template <class T>
T Tensor::item() const {
  if (numel() != 1)
    throw ShapeError("[item] expected a tensor with 1 element, got shape " +
                     shape().str());
  return to_vector<T>()[0];
}

template <class T>
std::vector<T> Tensor::to_vector() const {
  if constexpr (std::is_same_v<T, std::string>) {
    return to_strings();
  } else {
    // Into an integer type, a value T cannot hold is refused: a float's
    // conversion would be undefined behaviour, an integer's a silent wrap.
    constexpr bool to_integer =
        std::is_integral_v<T> && !std::is_same_v<T, bool>;
    if constexpr (to_integer) {
      if (!is_floating(dtype())) {
        auto v = host_int64s();
        for (const int64_t x : v)
          if (x < 0 ? (!std::is_signed_v<T> ||
                       x < int64_t(std::numeric_limits<T>::min()))
                    : uint64_t(x) > uint64_t(std::numeric_limits<T>::max()))
            throw_unrepresentable(x, sizeof(T), std::is_signed_v<T>);
        return std::vector<T>(v.begin(), v.end());
      }
    }
    auto v = host_doubles();
    std::vector<T> out(v.size());
    for (size_t i = 0; i < v.size(); ++i) {
      if constexpr (to_integer) {
        // Defined where the value truncated fits: [min, max + 1), not NaN.
        constexpr double lo = double(std::numeric_limits<T>::min());
        constexpr double above =
            2.0 * double(std::numeric_limits<T>::max() / 2 + 1);
        const double whole = std::trunc(v[i]);
        if (!(whole >= lo && whole < above))
          throw_unrepresentable(v[i], sizeof(T), std::is_signed_v<T>);
      }
      out[i] = static_cast<T>(v[i]);
    }
    return out;
  }
}

/** NumPy-like printing, elided ("...") beyond 1000 elements. */
std::ostream& operator<<(std::ostream& os, const Tensor& t);

}  // namespace tapeflow
