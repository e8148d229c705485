#pragma once
// The one way to build an error message: "[op] " followed by the parts.
#include <string>
#include <string_view>
#include <type_traits>

namespace tapeflow {

namespace detail {
inline void append_part(std::string& m, std::string_view part) {
  m += part;
}
template <class T>
  requires std::is_arithmetic_v<T>
void append_part(std::string& m, T value) {
  m += std::to_string(value);
}
}  // namespace detail

/**
 * E (a tapeflow::Error subclass) whose message is "[op] " and then the
 * parts, strings or numbers: op_error<ShapeError>(op, "expected ", a.str(),
 * ", got ", b.str()).
 */
template <class E, class... Parts>
E op_error(std::string_view op, const Parts&... parts) {
  std::string m = "[";
  m += op;
  m += "] ";
  (detail::append_part(m, parts), ...);
  return E(m);
}

}  // namespace tapeflow
