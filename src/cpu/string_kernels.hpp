#pragma once
// The string_ branches of the CPU kernels that take strings (add, equal,
// not_equal, where, cast, concat, gather): element loops over std::string
// objects, on the calling thread (a copy may throw std::bad_alloc).
#include <string>

#include "cpu/strided_loop.hpp"

namespace tapeflow::cpu::strings {

inline const std::string* chars(const Tensor& t) {
  return static_cast<const std::string*>(t.raw_data());
}
inline std::string* chars_out(const Tensor& t) {
  return static_cast<std::string*>(t.raw_data());
}

/** out = f(a, b) elementwise with broadcasting; f returns the element. */
template <class T, class F>
void binary(const Tensor& a, const Tensor& b, const Tensor& out, F f) {
  const std::string* pa = chars(a);
  const std::string* pb = chars(b);
  T* o = static_cast<T*>(out.raw_data());
  run_elementwise_serial<3>(
      out, {&a, &b}, [&](const auto& off, int64_t n, const auto& st) {
        for (int64_t i = 0; i < n; ++i)
          o[off[0] + i * st[0]] =
              f(pa[off[1] + i * st[1]], pb[off[2] + i * st[2]]);
      });
}

/** dst (any strides) = src. */
inline void copy(const Tensor& src, const Tensor& dst) {
  const std::string* s = chars(src);
  std::string* d = chars_out(dst);
  run_elementwise_serial<2>(dst, {&src},
                            [&](const auto& off, int64_t n, const auto& st) {
                              for (int64_t i = 0; i < n; ++i)
                                d[off[0] + i * st[0]] = s[off[1] + i * st[1]];
                            });
}

/** out = cond ? a : b with broadcasting. */
inline void where(const Tensor& cond, const Tensor& a, const Tensor& b,
                  const Tensor& out) {
  const uint8_t* c = static_cast<const uint8_t*>(cond.raw_data());
  const std::string* pa = chars(a);
  const std::string* pb = chars(b);
  std::string* o = chars_out(out);
  run_elementwise_serial<4>(
      out, {&cond, &a, &b}, [&](const auto& off, int64_t n, const auto& st) {
        for (int64_t i = 0; i < n; ++i)
          o[off[0] + i * st[0]] = c[off[1] + i * st[1]]
                                      ? pa[off[2] + i * st[2]]
                                      : pb[off[3] + i * st[3]];
      });
}

}  // namespace tapeflow::cpu::strings
