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
 * The block of x whose axes from `axis` on are cut to the kEdge first and
 * last entries of every elided axis, `begin` and `size` framing it on the
 * axes before. Every slice is a view and every block holds at most
 * (2 kEdge)^rank values, so a 4 GiB tensor (or a broadcast view of 2^62
 * elements) prints from a few hundred values: cutting one axis at a time
 * would concatenate whole rows of the others.
 */
Tensor shown_block(const Tensor& x, int64_t axis, std::vector<int64_t>& begin,
                   std::vector<int64_t>& size) {
  if (axis == x.rank()) return slice(x, begin, size);
  const int64_t n = x.shape()[axis];
  if (!elided_axis(true, n)) {
    begin[axis] = 0;
    size[axis] = n;
    return shown_block(x, axis + 1, begin, size);
  }
  size[axis] = kEdge;
  begin[axis] = 0;
  const Tensor head = shown_block(x, axis + 1, begin, size);
  begin[axis] = n - kEdge;
  const Tensor tail = shown_block(x, axis + 1, begin, size);
  return concat({head, tail}, axis);
}

/** x cut to what an elided print shows. */
Tensor shown_part(const Tensor& x) {
  NoGradGuard untaped;  // printing records nothing on an open tape
  std::vector<int64_t> begin(x.rank()), size(x.rank());
  return shown_block(x, 0, begin, size);
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

  /** The entry after i of an axis of n entries that the print shows. */
  int64_t next_shown(int64_t i, int64_t n) const {
    return elided_axis(elide, n) && i + 1 == kEdge ? n - kEdge : i + 1;
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
    for (int64_t i = 0; i < n; i = next_shown(i, n))
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
    for (int64_t i = 0; i < n; i = next_shown(i, n)) {
      if (i == n - kEdge && elided_axis(elide, n))
        os << (last_axis ? "..., " : "...,\n" + std::string(indent + 1, ' '));
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
  const Values values(elide ? shown_part(t) : t);
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
