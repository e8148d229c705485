#pragma once
// The one way to build an error message: "[op] " followed by the parts.
#include <charconv>
#include <string>
#include <string_view>
#include <type_traits>

namespace tapeflow {

namespace detail {
inline void append_part(std::string& m, std::string_view part) {
  m += part;
}
template <class T>
requires std::is_integral_v<T>
void append_part(std::string& m, T value) {
  m += std::to_string(value);
}
/** The shortest text that reads back as `value` (1e+10, not
 * 10000000000.000000). */
template <class T>
requires std::is_floating_point_v<T>
void append_part(std::string& m, T value) {
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, value);
  m.append(buf, r.ptr);
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
