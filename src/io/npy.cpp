// .npy headers:
// https://numpy.org/doc/stable/reference/generated/numpy.lib.format.html
#include "io/npy.hpp"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstring>

#include "tapeflow/core/error.hpp"

namespace tapeflow::io::detail {

namespace {
constexpr unsigned char kMagic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};

[[noreturn]] void fail(const std::string& expected, const std::string& got,
                       const std::string& where) {
  throw IOError("[load_npz] expected " + expected + ", got " + got + " (" +
                where + ")");
}

std::string shape_literal(const Shape& s) {
  std::string out = "(";
  for (int64_t i = 0; i < s.size(); ++i) {
    if (i) out += ", ";
    out += std::to_string(s[i]);
  }
  if (s.size() == 1) out += ",";
  return out + ")";
}

/** A tiny reader of the Python literals np.save writes. */
class Literal {
 public:
  Literal(const std::string& text, const std::string& where)
      : s_(text), where_(where) {}

  void skip_ws() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_])))
      ++i_;
  }
  bool peek(char c) {
    skip_ws();
    return i_ < s_.size() && s_[i_] == c;
  }
  void expect(char c) {
    if (!peek(c))
      fail(std::string("'") + c + "' in the header", context(), where_);
    ++i_;
  }
  std::string string() {
    skip_ws();
    if (i_ >= s_.size() || (s_[i_] != '\'' && s_[i_] != '"'))
      fail("a quoted string in the header", context(), where_);
    const char q = s_[i_++];
    const size_t end = s_.find(q, i_);
    if (end == std::string::npos)
      fail("a closing quote in the header", context(), where_);
    std::string out = s_.substr(i_, end - i_);
    i_ = end + 1;
    return out;
  }
  bool boolean() {
    skip_ws();
    if (s_.compare(i_, 4, "True") == 0) return i_ += 4, true;
    if (s_.compare(i_, 5, "False") == 0) return i_ += 5, false;
    fail("True or False in the header", context(), where_);
  }
  Shape tuple() {
    Shape shape;
    expect('(');
    while (!peek(')')) {
      skip_ws();
      uint64_t v = 0;
      size_t digits = 0;
      while (i_ < s_.size() &&
             std::isdigit(static_cast<unsigned char>(s_[i_]))) {
        // Any int64 extent: an empty array may have one of 2^50 (the data's
        // byte count is checked apart).
        const auto digit = static_cast<uint64_t>(s_[i_] - '0');
        if (v > (uint64_t(INT64_MAX) - digit) / 10)
          fail("a shape extent below 2^63", context(), where_);
        v = v * 10 + digit;
        ++i_;
        ++digits;
      }
      if (!digits)
        fail("a non-negative integer in the header's shape", context(), where_);
      if (i_ < s_.size() && s_[i_] == 'L') ++i_;  // Python 2 long
      if (shape.size() == kMaxRank)
        fail("a rank of at most " + std::to_string(kMaxRank), "more", where_);
      shape.push_back(static_cast<int64_t>(v));
      if (!peek(',')) break;
      ++i_;
    }
    expect(')');
    return shape;
  }
  std::string context() const {
    std::string out(1, '\'');  // (GCC 12 -Wrestrict misfires on "'" + s)
    out.append(s_, std::min(i_, s_.size()), 20);
    out += '\'';
    return out;
  }

 private:
  const std::string& s_;
  const std::string& where_;
  size_t i_ = 0;
};

DType parse_descr(const std::string& d, const std::string& where) {
  const std::string expected = "a dtype among '<f4' '<f8' '<i4' '<i8' '|b1'";
  if (d.size() == 3) {
    const std::string t = d.substr(1);
    const char order = d[0];
    if (t == "b1" &&
        (order == '|' || order == '<' || order == '=' || order == '>'))
      return bool_;
    if (order == '<' || order == '=') {  // '=': native, little-endian here
      if (t == "f4") return float32;
      if (t == "f8") return float64;
      if (t == "i4") return int32;
      if (t == "i8") return int64;
    }
  }
  fail(expected, "'" + d + "'", where);
}
}  // namespace

const char* npy_descr(DType dtype) {
  switch (dtype) {
    case DType::float32:
      return "<f4";
    case DType::float64:
      return "<f8";
    case DType::int32:
      return "<i4";
    case DType::int64:
      return "<i8";
    case DType::bool_:
      return "|b1";
    case DType::string_:  // refused by save_npz's check_names
      break;
  }
  return "?";
}

std::string npy_header(DType dtype, const Shape& shape) {
  std::string dict =
      std::string("{'descr': '") + npy_descr(dtype) +
      "', 'fortran_order': False, 'shape': " + shape_literal(shape) + ", }";
  const size_t unpadded = 10 + dict.size() + 1;
  dict.append((64 - unpadded % 64) % 64, ' ');
  dict += '\n';
  std::string out(reinterpret_cast<const char*>(kMagic), 6);
  out += '\x01';
  out += '\x00';
  out += static_cast<char>(dict.size() & 0xff);
  out += static_cast<char>((dict.size() >> 8) & 0xff);
  return out + dict;
}

size_t npy_prefix_size(const unsigned char* p, const std::string& where) {
  if (std::memcmp(p, kMagic, 6) != 0)
    fail("the .npy magic \"\\x93NUMPY\"", "other bytes", where);
  if (p[6] == 1) return 10;
  if (p[6] == 2 || p[6] == 3) return 12;
  fail(".npy format version 1, 2 or 3", "version " + std::to_string(p[6]),
       where);
}

uint64_t npy_header_length(const unsigned char* p) {
  if (p[6] == 1) return p[8] | (uint64_t{p[9]} << 8);
  return p[8] | (uint64_t{p[9]} << 8) | (uint64_t{p[10]} << 16) |
         (uint64_t{p[11]} << 24);
}

NpyHeader parse_npy_header(const std::string& text, const std::string& where) {
  Literal lit(text, where);
  bool have_descr = false, have_order = false, have_shape = false;
  NpyHeader h{float32, {}, 0};
  lit.expect('{');
  while (!lit.peek('}')) {
    const std::string key = lit.string();
    lit.expect(':');
    if (key == "descr") {
      h.dtype = parse_descr(lit.string(), where);
      have_descr = true;
    } else if (key == "fortran_order") {
      if (lit.boolean())
        fail("'fortran_order': False (C order)", "True", where);
      have_order = true;
    } else if (key == "shape") {
      h.shape = lit.tuple();
      have_shape = true;
    } else {
      fail("the keys 'descr', 'fortran_order' and 'shape'", "'" + key + "'",
           where);
    }
    if (!lit.peek(',')) break;
    lit.expect(',');
  }
  lit.expect('}');
  if (!have_descr || !have_order || !have_shape)
    fail("the keys 'descr', 'fortran_order' and 'shape'",
         "a header without " + std::string(!have_descr   ? "'descr'"
                                           : !have_order ? "'fortran_order'"
                                                         : "'shape'"),
         where);
  uint64_t bytes = itemsize(h.dtype);
  for (int64_t d : h.shape)
    if (__builtin_mul_overflow(bytes, static_cast<uint64_t>(d), &bytes) ||
        bytes > (uint64_t{1} << 62))
      fail("an array below 2^62 bytes", "shape " + h.shape.str(), where);
  h.data_bytes = bytes;
  return h;
}

}  // namespace tapeflow::io::detail
