#pragma once
// Dataset::prefetch_to_device: prefetch() whose background thread also
// copies each element to a device, so that the next batch's host-to-device
// copy is queued while the consumer computes on this one. Included by
// dataset.hpp; include that.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "tapeflow/data/dataset_core.hpp"
#include "tapeflow/data/transforms.hpp"

namespace tapeflow::data {

namespace detail {

template <class T>
struct is_vector : std::false_type {};
template <class T>
struct is_vector<std::vector<T>> : std::true_type {};

/**
 * `value` with its tensors on `device`. String tensors stay on the host,
 * where they must live; values that are not tensors have no device.
 */
template <class T>
T copy_to_device(T value, Device device) {
  if constexpr (std::is_same_v<T, Tensor>) {
    return is_string(value.dtype()) ? value : value.to(device);
  } else if constexpr (is_tuple<T>::value) {
    std::apply([device](auto&... c) { ((c = copy_to_device(c, device)), ...); },
               value);
    return value;
  } else if constexpr (is_vector<T>::value) {
    for (auto& v : value) v = copy_to_device(std::move(v), device);
    return value;
  } else {
    return value;
  }
}

}  // namespace detail

template <class T>
Dataset<T> Dataset<T>::prefetch_to_device(Device device,
                                          int64_t buffer_size) const {
  buffer_size = detail::prefetch_buffer("prefetch_to_device", buffer_size);
  Dataset up = *this;
  return Dataset(
      [up, device, buffer_size]() -> std::unique_ptr<IteratorImpl<T>> {
        // The copy is a stage under the prefetch, so it runs on the
        // prefetch's thread rather than in the consumer's get_next().
        auto copied = detail::make_fn_iterator<T>(
            [in = up.make_impl(), device]() mutable -> std::optional<T> {
              std::optional<T> x = in->next();
              if (!x) return std::nullopt;
              return detail::copy_to_device(std::move(*x), device);
            });
        return std::make_unique<detail::PrefetchIterator<T>>(
            std::move(copied), buffer_size, "prefetch_to_device");
      },
      cardinality_);
}

}  // namespace tapeflow::data
