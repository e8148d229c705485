#include "ops/composite.hpp"

#include <string>

#include "ops/apply.hpp"
#include "tapeflow/core/error.hpp"

namespace tapeflow {
namespace {

/** "[inner] rest" as "[op] inner: rest"; unchanged when inner is op. */
std::string renamed(std::string_view op, std::string_view message) {
  std::string out = "[";
  out += op;
  out += "] ";
  const size_t close = message.find("] ");
  if (message.starts_with('[') && close != std::string_view::npos) {
    const std::string_view inner = message.substr(1, close - 1);
    if (inner == op) return std::string(message);
    out += inner;
    out += ": ";
    message.remove_prefix(close + 2);
  }
  out += message;
  return out;
}

template <class E, class... Rest>
[[noreturn]] void rethrow_as(std::string_view op, const Error& e) {
  if (dynamic_cast<const E*>(&e)) throw E(renamed(op, e.what()));
  if constexpr (sizeof...(Rest) > 0)
    rethrow_as<Rest...>(op, e);
  else
    throw Error(renamed(op, e.what()));
}

}  // namespace

void rethrow_in_composite(std::string_view op) {
  try {
    throw;
  } catch (const Error& e) {
    // Subclasses before their bases: an out-of-memory error stays one.
    rethrow_as<ShapeError, DTypeError, ResourceExhaustedError, DeviceError,
               IndexError, IOError, ValueError, DataLossError, OutOfRangeError,
               CancelledError>(op, e);
  } catch (const std::exception&) {
    rethrow_as_error(std::string(op).c_str());
  }
}

}  // namespace tapeflow
