// tf.strings for string_ tensors: host loops over the elements' text.
#include "tapeflow/strings.hpp"

#include <re2/re2.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>
#include <string_view>
#include <type_traits>

#include "core/checked.hpp"
#include "core/creation_internal.hpp"
#include "core/op_error.hpp"
#include "ops/composite.hpp"
#include "tapeflow/creation.hpp"
#include "tapeflow/ops/math.hpp"
#include "tapeflow/ops/shape.hpp"

namespace tapeflow {
namespace {

/** The text of a string tensor, row-major; DTypeError naming `op` otherwise. */
std::vector<std::string> texts(const Tensor& s, const char* op) {
  if (!s.defined())
    throw op_error<ValueError>(
        op, "expected a defined tensor, got an empty handle");
  if (!is_string(s.dtype()))
    throw op_error<DTypeError>(op, "expected a string tensor, got ",
                               dtype_name(s.dtype()));
  return s.to_strings();
}

/** A tensor of `shape` whose element i is f(text i). */
template <class T, class F>
Tensor map_texts(const Tensor& s, const char* op, F f) {
  const std::vector<std::string> in = texts(s, op);
  std::vector<T> out;
  out.reserve(in.size());
  for (size_t i = 0; i < in.size(); ++i) out.push_back(f(in[i], i));
  return from_vector(out, s.shape());
}

}  // namespace

Tensor from_strings(const std::vector<std::string>& values,
                    const Shape& shape) {
  if (static_cast<int64_t>(values.size()) != shape.numel())
    throw op_error<ShapeError>("from_strings", "expected ", shape.numel(),
                               " strings for shape ", shape.str(), ", got ",
                               values.size());
  Tensor t = empty_tensor(shape, string_, Device::cpu(), "from_strings");
  std::copy(values.begin(), values.end(),
            static_cast<std::string*>(t.raw_data()));
  return t;
}

Tensor constant(const std::string& text) {
  return from_strings({text}, {});
}

Tensor operator+(const Tensor& s, const std::string& text) {
  return s + constant(text);
}
Tensor operator+(const std::string& text, const Tensor& s) {
  return constant(text) + s;
}
Tensor equal(const Tensor& s, const std::string& text) {
  return equal(s, constant(text));
}
Tensor not_equal(const Tensor& s, const std::string& text) {
  return not_equal(s, constant(text));
}

namespace strings {

Tensor join(const Tensor& s, const std::string& separator, int64_t axis) {
  const std::vector<std::string> in = texts(s, "join");
  // A 0-d tensor has no axis to join: the default returns it, as TF's
  // axis=None; any other axis is out of range, as in TF.
  if (s.rank() == 0 && axis != -1)
    throw op_error<IndexError>("join",
                               "expected the default axis -1 for a 0-d "
                               "tensor (nothing to join), got ",
                               axis);
  if (s.rank() == 0) return s;
  if (axis < -s.rank() || axis >= s.rank())
    throw op_error<IndexError>("join", "expected an axis in [", -s.rank(), ", ",
                               s.rank(), "), got ", axis);
  const int64_t a = axis < 0 ? axis + s.rank() : axis;
  Shape shape;
  for (int64_t i = 0; i < s.rank(); ++i)
    if (i != a) shape.push_back(s.shape()[i]);
  // The input may be empty and the output not: (2^32, 0, 2^32) joins to
  // 2^64 strings, a product that must not wrap.
  const int64_t count = checked_numel(shape, "join");
  if (count == 0) return from_strings({}, shape);
  int64_t inner = 1;  // divides count: no overflow
  for (int64_t i = a + 1; i < s.rank(); ++i) inner *= s.shape()[i];
  const int64_t outer = count / inner;
  const int64_t n = s.shape()[a];
  return composite("join", [&] {
    std::vector<std::string> out(static_cast<size_t>(count));
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t k = 0; k < inner; ++k) {
        std::string& joined = out[o * inner + k];
        for (int64_t j = 0; j < n; ++j) {
          if (j > 0) joined += separator;
          joined += in[(o * n + j) * inner + k];
        }
      }
    return from_strings(out, shape);
  });
}

Tensor join(const std::vector<Tensor>& parts, const std::string& separator) {
  if (parts.empty())
    throw op_error<ValueError>("join",
                               "expected at least one tensor, got none");
  Tensor out = parts[0];
  texts(out, "join");
  for (size_t i = 1; i < parts.size(); ++i) {
    texts(parts[i], "join");
    out = composite("join", [&] {
      return separator.empty() ? out + parts[i] : out + separator + parts[i];
    });
  }
  return out;
}

Tensor split(const Tensor& s, const std::string& separator) {
  const std::vector<std::string> in = texts(s, "split");
  if (s.rank() > 1)
    throw op_error<ShapeError>(
        "split", "expected a 0-d or 1-D string tensor, got ", s.shape().str());
  std::vector<std::vector<std::string>> pieces;
  for (const std::string& text : in) {
    std::vector<std::string>& p = pieces.emplace_back();
    if (separator.empty()) {
      size_t i = 0;
      while (i < text.size()) {
        while (i < text.size() &&
               std::isspace(static_cast<unsigned char>(text[i])))
          ++i;
        size_t j = i;
        while (j < text.size() &&
               !std::isspace(static_cast<unsigned char>(text[j])))
          ++j;
        if (j > i) p.push_back(text.substr(i, j - i));
        i = j;
      }
    } else {
      size_t start = 0;
      for (size_t hit; (hit = text.find(separator, start)) != std::string::npos;
           start = hit + separator.size())
        p.push_back(text.substr(start, hit - start));
      p.push_back(text.substr(start));
    }
  }
  if (s.rank() == 0)
    return from_strings(pieces[0], {static_cast<int64_t>(pieces[0].size())});
  size_t longest = 0;
  for (const auto& p : pieces) longest = std::max(longest, p.size());
  const Shape shape{static_cast<int64_t>(pieces.size()),
                    static_cast<int64_t>(longest)};
  // The padded result may be far larger than the input (one long string
  // among many short ones): its size is checked, its allocation reported.
  const int64_t count = checked_numel(shape, "split");
  return composite("split", [&] {
    std::vector<std::string> out(static_cast<size_t>(count));
    for (size_t r = 0; r < pieces.size(); ++r)
      std::move(pieces[r].begin(), pieces[r].end(), out.begin() + r * longest);
    return from_strings(out, shape);
  });
}

Tensor length(const Tensor& s) {
  return map_texts<int32_t>(s, "length", [](const std::string& t, size_t) {
    if (t.size() > static_cast<size_t>(std::numeric_limits<int32_t>::max()))
      throw op_error<ValueError>(
          "length", "expected strings under 2^31 bytes, got ", t.size());
    return static_cast<int32_t>(t.size());
  });
}

namespace {

/** `t` without the ASCII white space around it (TF's parsers skip it). */
std::string_view trimmed(const std::string& t) {
  constexpr const char* kSpace = " \t\n\v\f\r";
  const size_t first = t.find_first_not_of(kSpace);
  if (first == std::string::npos) return {};
  return std::string_view(t).substr(first,
                                    t.find_last_not_of(kSpace) - first + 1);
}

/** Whether `text` starts with a letter (a word such as "inf", not digits). */
bool is_word(std::string_view text) {
  return !text.empty() && std::isalpha(static_cast<unsigned char>(text[0]));
}

/** ASCII case-insensitive equality. */
bool iequal(std::string_view a, std::string_view b) {
  return a.size() == b.size() &&
         std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

/**
 * A float past T's range, as TensorFlow's double-conversion parser gives
 * it: +-inf for an overflow, +-0 for an underflow. `digits` (a valid number
 * that from_chars found out of range) is taken as a long double first; one
 * past even that is judged by its exponent's sign.
 */
template <class T>
T out_of_range_float(std::string_view digits, bool negative,
                     std::chars_format format) {
  long double wide = 0;
  const auto [end, ec] = std::from_chars(
      digits.data(), digits.data() + digits.size(), wide, format);
  bool overflow;
  if (ec == std::errc()) {
    if (wide <= std::numeric_limits<T>::max()) {
      const T v = static_cast<T>(wide);
      return negative ? -v : v;
    }
    overflow = true;
  } else {
    const size_t e =
        digits.find_last_of(format == std::chars_format::hex ? "pP" : "eE");
    overflow = e == std::string_view::npos || e + 1 == digits.size() ||
               digits[e + 1] != '-';
  }
  const T v = overflow ? std::numeric_limits<T>::infinity() : T(0);
  return negative ? -v : v;
}

}  // namespace

Tensor to_number(const Tensor& s, DType dtype) {
  const auto bad = [](const std::string& t, size_t i, const char* why) {
    return op_error<ValueError>("to_number", "expected ", why, ", got \"", t,
                                "\" at position ", i);
  };
  // TF's rules (strings::safe_strto*): white space around the number and a
  // sign are allowed; floats may be hexadecimal (0x...) and overflow to inf.
  const auto parse = [&](const std::string& t, size_t i, auto value) {
    using T = decltype(value);
    std::string_view text = trimmed(t);
    const bool negative = !text.empty() && text[0] == '-';
    if (!text.empty() && (text[0] == '+' || text[0] == '-'))
      text.remove_prefix(1);
    if (text.empty() || text[0] == '+' || text[0] == '-')
      throw bad(t, i, "a number");
    std::from_chars_result r;
    if constexpr (std::is_floating_point_v<T>) {
      auto format = std::chars_format::general;
      if (text.size() > 2 && text[0] == '0' && (text[1] | 0x20) == 'x') {
        text.remove_prefix(2);
        format = std::chars_format::hex;
        // Hex digits only, as TF's parser (from_chars would also take a
        // sign, "inf", a fraction and a p exponent here).
        if (text.find_first_not_of("0123456789abcdefABCDEF") !=
            std::string_view::npos)
          throw bad(t, i, "a number");
      } else if (is_word(text)) {
        // TF's words are "inf" and "nan" (any case), not "infinity" or
        // "nan(...)", which from_chars takes.
        if (!iequal(text, "inf") && !iequal(text, "nan"))
          throw bad(t, i, "a number");
      }
      r = std::from_chars(text.data(), text.data() + text.size(), value,
                          format);
      if (r.ec == std::errc::result_out_of_range &&
          r.ptr == text.data() + text.size())
        return out_of_range_float<T>(text, negative, format);
      if (negative) value = -value;
    } else {
      // The sign stays with the digits, so that INT_MIN parses.
      if (negative) text = std::string_view(text.data() - 1, text.size() + 1);
      r = std::from_chars(text.data(), text.data() + text.size(), value);
      if (r.ec == std::errc::result_out_of_range)
        throw bad(t, i, "a number that fits");
    }
    if (r.ec != std::errc() || r.ptr != text.data() + text.size())
      throw bad(t, i, "a number");
    return value;
  };
  switch (dtype) {
    case DType::float32:
      return map_texts<float>(
          s, "to_number",
          [&](const std::string& t, size_t i) { return parse(t, i, 0.0f); });
    case DType::float64:
      return map_texts<double>(
          s, "to_number",
          [&](const std::string& t, size_t i) { return parse(t, i, 0.0); });
    case DType::int32:
      return map_texts<int32_t>(s, "to_number",
                                [&](const std::string& t, size_t i) {
                                  return parse(t, i, int32_t{});
                                });
    case DType::int64:
      return map_texts<int64_t>(s, "to_number",
                                [&](const std::string& t, size_t i) {
                                  return parse(t, i, int64_t{});
                                });
    case DType::bool_:
    case DType::string_:
      break;
  }
  throw op_error<DTypeError>("to_number",
                             "expected float32, float64, int32 or int64, got ",
                             dtype_name(dtype));
}

Tensor substr(const Tensor& s, int64_t pos, int64_t len) {
  return map_texts<std::string>(
      s, "substr", [&](const std::string& t, size_t i) {
        const auto size = static_cast<int64_t>(t.size());
        // TF: a negative pos counts from the end, a negative len takes the
        // rest of the string.
        const int64_t at = pos < 0 ? pos + size : pos;
        if (at < 0 || at > size)
          throw op_error<IndexError>("substr", "expected pos in [", -size, ", ",
                                     size, "] for the string's ", size,
                                     " bytes, got ", pos, " at position ", i);
        return t.substr(static_cast<size_t>(at),
                        len < 0 ? std::string::npos : static_cast<size_t>(len));
      });
}

Tensor lower(const Tensor& s) {
  return map_texts<std::string>(s, "lower", [](std::string t, size_t) {
    for (char& c : t)
      c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return t;
  });
}

Tensor upper(const Tensor& s) {
  return map_texts<std::string>(s, "upper", [](std::string t, size_t) {
    for (char& c : t)
      c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    return t;
  });
}

Tensor regex_full_match(const Tensor& s, const std::string& pattern) {
  const std::vector<std::string> in = texts(s, "regex_full_match");
  // RE2, as TensorFlow: its automata match in time linear in the text, so no
  // pattern can backtrack for ever ("(a*)*b") or recurse through the stack.
  RE2::Options options;
  options.set_log_errors(false);
  const RE2 re(pattern, options);
  if (!re.ok())
    throw op_error<ValueError>("regex_full_match",
                               "expected a valid RE2 pattern, got \"", pattern,
                               "\": ", re.error());
  std::vector<bool> matched(in.size());
  for (size_t i = 0; i < in.size(); ++i) matched[i] = RE2::FullMatch(in[i], re);
  return from_vector(matched, s.shape());
}

Vocabulary::Vocabulary(const std::vector<std::string>& tokens) {
  for (const std::string& t : tokens)
    if (!t.empty()) ids_.emplace(t, static_cast<int64_t>(ids_.size()) + 2);
}

Tensor Vocabulary::lookup(const Tensor& tokens) const {
  return map_texts<int64_t>(tokens, "lookup",
                            [&](const std::string& t, size_t) {
                              if (t.empty()) return int64_t{0};
                              const auto it = ids_.find(t);
                              return it == ids_.end() ? int64_t{1} : it->second;
                            });
}

}  // namespace strings
}  // namespace tapeflow
