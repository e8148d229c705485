#pragma once
// Public functions built from other ops (log_softmax, layer_normalization,
// split, ...): an error raised inside names the function the user called.
#include <exception>
#include <string_view>
#include <utility>

#include "tapeflow/core/error.hpp"

namespace tapeflow {

/**
 * Rethrows the tapeflow::Error being handled as the same type, its message
 * naming `op` first and the inner op after it: "[max] expected a numeric
 * dtype, got bool" inside log_softmax becomes "[log_softmax] max: expected a
 * numeric dtype, got bool". A message that already names `op` passes as is.
 * Any other std::exception (std::bad_alloc, std::length_error) becomes the
 * tapeflow::Error that fits, naming `op` (rethrow_as_error).
 */
[[noreturn]] void rethrow_in_composite(std::string_view op);

/** body(), with its errors named as the user's composite `op`. */
template <class F>
decltype(auto) composite(std::string_view op, F&& body) {
  try {
    return std::forward<F>(body)();
  } catch (const std::exception&) {
    rethrow_in_composite(op);
  }
}

}  // namespace tapeflow
