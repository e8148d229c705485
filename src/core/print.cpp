// NumPy-like printing: nested brackets, aligned columns, "..." past 1000
// elements (3 items kept at each edge of every axis, and only those copied
// to the host).
#include <cstdio>
#include <iomanip>
#include <ostream>
#include <sstream>
#include <vector>

#include "tapeflow/autograd.hpp"
#include "tapeflow/core/tensor.hpp"
#include "tapeflow/ops/shape.hpp"

namespace tapeflow {
namespace {

constexpr int64_t kThreshold = 1000;
constexpr int64_t kEdge = 3;

/** Whether an elided print skips the middle of an axis of n entries. */
bool elided_axis(bool elide, int64_t n) {
  return elide && n > 2 * kEdge;
}

/**
 * x cut to the kEdge first and last entries of every elided axis: all that
 * an elided print shows, so a 4 GiB tensor (or a broadcast view of 2^40
 * elements) prints from a few hundred values, not a host copy of it all.
 */
Tensor shown_part(const Tensor& x, bool elide) {
  NoGradGuard untaped;  // printing records nothing on an open tape
  Tensor part = x;
  for (int64_t a = 0; a < x.rank(); ++a) {
    const int64_t n = x.shape()[a];
    if (!elided_axis(elide, n)) continue;
    std::vector<int64_t> begin(x.rank(), 0);
    std::vector<int64_t> size = part.shape().to_vector();
    size[a] = kEdge;
    const Tensor head = slice(part, begin, size);
    begin[a] = n - kEdge;
    part = concat({head, slice(part, begin, size)}, a);
  }
  return part;
}

/**
 * The host values of a tensor, kept in their own kind: int64 through double
 * would print 2^53 + 1 wrong and INT64_MAX negative.
 */
struct Values {
  DType dtype;
  std::vector<double> floats;
  std::vector<int64_t> ints;
  std::vector<std::string> texts;

  explicit Values(const Tensor& t) : dtype(t.dtype()) {
    if (is_string(dtype))
      texts = t.to_strings();
    else if (is_floating(dtype))
      floats = t.to_vector<double>();
    else
      ints = t.to_vector<int64_t>();
  }
  /** "text" with quotes, backslashes and control bytes escaped. */
  static std::string quoted(const std::string& text) {
    std::string out = "\"";
    for (unsigned char c : text) {
      if (c == '"' || c == '\\') {
        out += '\\';
        out += static_cast<char>(c);
      } else if (c == '\n') {
        out += "\\n";
      } else if (c == '\t') {
        out += "\\t";
      } else if (c < 0x20 || c == 0x7f) {
        char hex[5];
        std::snprintf(hex, sizeof hex, "\\x%02x", c);
        out += hex;
      } else {
        out += static_cast<char>(c);
      }
    }
    return out + '"';
  }
  std::string format(int64_t i) const {
    if (is_string(dtype)) return quoted(texts[i]);
    if (dtype == bool_) return ints[i] != 0 ? "true" : "false";
    if (!is_floating(dtype)) return std::to_string(ints[i]);
    std::ostringstream os;
    os << std::setprecision(dtype == float32 ? 6 : 8) << floats[i];
    std::string s = os.str();
    if (s.find_first_of(".eninf") == std::string::npos) s += ".";
    return s;
  }
};

/**
 * Prints the tensor of `shape` from the values of its shown part (every
 * elided axis cut to its 2 kEdge edge entries).
 */
struct Printer {
  const Values& values;
  const Shape& shape;
  bool elide;
  size_t width = 0;

  bool skipped(int64_t i, int64_t n) const {
    return elided_axis(elide, n) && i >= kEdge && i < n - kEdge;
  }
  /** Where entry i of `axis` sits in the shown part. */
  int64_t shown_index(int64_t i, int64_t axis) const {
    const int64_t n = shape[axis];
    return elided_axis(elide, n) && i >= kEdge ? i - (n - 2 * kEdge) : i;
  }
  void measure(int64_t axis, int64_t offset) {
    if (axis == shape.size()) {
      width = std::max(width, values.format(offset).size());
      return;
    }
    const int64_t n = shape[axis];
    const int64_t inner = stride(axis);
    for (int64_t i = 0; i < n; ++i)
      if (!skipped(i, n))
        measure(axis + 1, offset + shown_index(i, axis) * inner);
  }
  /** The shown part's stride of `axis`. */
  int64_t stride(int64_t axis) const {
    int64_t s = 1;
    for (int64_t i = axis + 1; i < shape.size(); ++i)
      s *= elided_axis(elide, shape[i]) ? 2 * kEdge : shape[i];
    return s;
  }
  void print(std::ostream& os, int64_t axis, int64_t offset, int indent) const {
    if (axis == shape.size()) {
      os << std::setw(static_cast<int>(width)) << values.format(offset);
      return;
    }
    os << '[';
    const int64_t n = shape[axis];
    const int64_t inner = stride(axis);
    const bool last_axis = axis + 1 == shape.size();
    for (int64_t i = 0; i < n; ++i) {
      if (skipped(i, n)) {
        if (i == kEdge)
          os << (last_axis ? "..., " : "...,\n" + std::string(indent + 1, ' '));
        continue;
      }
      print(os, axis + 1, offset + shown_index(i, axis) * inner, indent + 1);
      if (i + 1 < n) {
        os << ',';
        if (last_axis) {
          os << ' ';
        } else {
          os << std::string(shape.size() - axis - 1, '\n')
             << std::string(indent + 1, ' ');
        }
      }
    }
    os << ']';
  }
};

}  // namespace

std::ostream& operator<<(std::ostream& os, const Tensor& t) {
  if (!t.defined()) return os << "Tensor(undefined)";
  const bool elide = t.numel() > kThreshold;
  const Values values(elide ? shown_part(t, elide) : t);
  Printer p{values, t.shape(), elide};
  const std::string head = "Tensor(";
  if (t.numel() > 0) p.measure(0, 0);
  os << head;
  if (t.numel() == 0 && t.rank() > 0)
    os << "[]";
  else
    p.print(os, 0, 0, static_cast<int>(head.size()));
  return os << ", shape=" << t.shape() << ", dtype=" << t.dtype() << ")";
}

}  // namespace tapeflow
