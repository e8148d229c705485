#pragma once
// How Dataset::batch and padded_batch combine elements, per element type:
// BatchTraits (stacking), PaddedBatchTraits and PaddingValues (padding).
#include <cstdint>
#include <initializer_list>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "tapeflow/core/tensor.hpp"
#include "tapeflow/creation.hpp"

namespace tapeflow::data {

namespace detail {

/**
 * Stacks tensors of one shape and dtype on a new axis 0. A mismatch is a
 * ShapeError (DTypeError) naming `op` and both shapes (dtypes).
 */
Tensor stack(const std::vector<Tensor>& elements, const char* op);

/**
 * Pads every tensor with `value` at the end of each axis up to
 * `padded_shape` and stacks them on a new axis 0. An empty `padded_shape`, or
 * -1 in one of its entries, means the longest in the batch on that axis.
 * Ranks must agree; an element longer than its padded extent is a ShapeError
 * naming `op`.
 */
Tensor pad_and_stack(const std::vector<Tensor>& elements,
                     const std::vector<int64_t>& padded_shape, double value,
                     const char* op);

template <class T>
inline constexpr bool is_dtype_scalar =
    std::is_same_v<T, float> || std::is_same_v<T, double> ||
    std::is_same_v<T, int32_t> || std::is_same_v<T, int64_t>;

}  // namespace detail

/**
 * batch() for elements of type T: `type` is the batched element and
 * `combine` builds it. Tensors stack on a new axis 0 (shapes must match);
 * float/double/int32/int64 become a 1-D tensor; tuples batch per component;
 * anything else (std::string included) becomes a std::vector. Specialize it
 * for a type of your own.
 */
template <class T>
struct BatchTraits {
  using type = std::vector<T>;
  static type combine(std::vector<T>&& elements, const char*) {
    return std::move(elements);
  }
};

template <>
struct BatchTraits<Tensor> {
  using type = Tensor;
  static Tensor combine(std::vector<Tensor>&& elements, const char* op) {
    return detail::stack(elements, op);
  }
};

template <class T>
requires detail::is_dtype_scalar<T>
struct BatchTraits<T> {
  using type = Tensor;
  static Tensor combine(std::vector<T>&& elements, const char*) {
    return from_vector(elements, {static_cast<int64_t>(elements.size())});
  }
};

template <class... Ts>
struct BatchTraits<std::tuple<Ts...>> {
  using type = std::tuple<typename BatchTraits<Ts>::type...>;
  static type combine(std::vector<std::tuple<Ts...>>&& elements,
                      const char* op) {
    return split(std::move(elements), op, std::index_sequence_for<Ts...>{});
  }

 private:
  template <size_t... I>
  static type split(std::vector<std::tuple<Ts...>>&& elements, const char* op,
                    std::index_sequence<I...>) {
    std::tuple<std::vector<Ts>...> parts;
    (std::get<I>(parts).reserve(elements.size()), ...);
    for (auto& e : elements)
      (std::get<I>(parts).push_back(std::move(std::get<I>(e))), ...);
    return type{BatchTraits<Ts>::combine(std::move(std::get<I>(parts)), op)...};
  }
};

template <class T>
using batch_t = typename BatchTraits<T>::type;

/**
 * The padding of padded_batch(): one value for every component (a number),
 * or one per component of a tuple element ({0, -1}); each is cast to its
 * component's dtype.
 */
class PaddingValues {
 public:
  // Implicit, so that padded_batch(n, shapes, -1.0) reads as in tf.data.
  PaddingValues(double all = 0.0) : values_{all} {}
  PaddingValues(std::initializer_list<double> per_component)
      : values_(per_component) {}

  size_t size() const { return values_.size(); }
  /** The value of component i. */
  double operator[](size_t i) const {
    return values_.size() == 1 ? values_[0] : values_.at(i);
  }

 private:
  std::vector<double> values_;
};

/**
 * padded_batch() for a Tensor or a tuple of Tensors: `shapes` holds one
 * padded shape per component (or none: the longest in the batch for all).
 */
template <class T>
struct PaddedBatchTraits;

template <>
struct PaddedBatchTraits<Tensor> {
  static constexpr size_t components = 1;
  static Tensor combine(std::vector<Tensor>&& elements,
                        const std::vector<std::vector<int64_t>>& shapes,
                        const PaddingValues& values, const char* op) {
    return detail::pad_and_stack(
        elements, shapes.empty() ? std::vector<int64_t>{} : shapes[0],
        values[0], op);
  }
};

template <class... Ts>
requires(std::is_same_v<Ts, Tensor>&&...) struct PaddedBatchTraits<
    std::tuple<Ts...>> {
  static constexpr size_t components = sizeof...(Ts);
  static std::tuple<Ts...> combine(
      std::vector<std::tuple<Ts...>>&& elements,
      const std::vector<std::vector<int64_t>>& shapes,
      const PaddingValues& values, const char* op) {
    return split(std::move(elements), shapes, values, op,
                 std::index_sequence_for<Ts...>{});
  }

 private:
  template <size_t... I>
  static std::tuple<Ts...> split(
      std::vector<std::tuple<Ts...>>&& elements,
      const std::vector<std::vector<int64_t>>& shapes,
      const PaddingValues& values, const char* op, std::index_sequence<I...>) {
    std::tuple<std::vector<Ts>...> parts;
    for (auto& e : elements)
      (std::get<I>(parts).push_back(std::move(std::get<I>(e))), ...);
    return {detail::pad_and_stack(
        std::get<I>(parts), shapes.empty() ? std::vector<int64_t>{} : shapes[I],
        values[I], op)...};
  }
};

}  // namespace tapeflow::data
