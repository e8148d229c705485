#pragma once
#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <string>
#include <string_view>

namespace tapeflow {

/**
 * Element types. `bool_` is stored as one byte (0 or 1); `string_` (CPU only)
 * as std::string objects: text, not a number, never promoted to or from.
 */
enum class DType : uint8_t { bool_, int32, int64, float32, float64, string_ };

inline constexpr DType bool_ = DType::bool_;
inline constexpr DType int32 = DType::int32;
inline constexpr DType int64 = DType::int64;
inline constexpr DType float32 = DType::float32;
inline constexpr DType float64 = DType::float64;
inline constexpr DType string_ = DType::string_;

/** Bytes per element. */
constexpr size_t itemsize(DType t) {
  constexpr size_t sizes[] = {1, 4, 8, 4, 8, sizeof(std::string)};
  return sizes[static_cast<int>(t)];
}
constexpr bool is_floating(DType t) {
  return t == DType::float32 || t == DType::float64;
}
constexpr bool is_integral(DType t) {
  return t == DType::int32 || t == DType::int64;
}
constexpr bool is_string(DType t) {
  return t == DType::string_;
}

/**
 * Type promotion for binary ops: the wider of the two along
 * bool < int32 < int64 < float32 < float64 (int64 with float32 gives float32,
 * as in PyTorch and JAX). Ops refuse a string mixed with a number before
 * promoting (string_ with string_ stays string_).
 */
constexpr DType promote(DType a, DType b) {
  return a > b ? a : b;
}

/** The floating type an op like exp() computes in for dtype `t`. */
constexpr DType floating_of(DType t) {
  return is_floating(t) ? t : DType::float32;
}

std::string_view dtype_name(DType t);
std::ostream& operator<<(std::ostream& os, DType t);

/** C++ type to dtype; bool maps to bool_. */
template <class T>
constexpr DType dtype_of();
template <>
constexpr DType dtype_of<bool>() {
  return DType::bool_;
}
template <>
constexpr DType dtype_of<int32_t>() {
  return DType::int32;
}
template <>
constexpr DType dtype_of<int64_t>() {
  return DType::int64;
}
template <>
constexpr DType dtype_of<float>() {
  return DType::float32;
}
template <>
constexpr DType dtype_of<double>() {
  return DType::float64;
}
template <>
constexpr DType dtype_of<std::string>() {
  return DType::string_;
}

}  // namespace tapeflow
