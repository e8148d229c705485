// NumPy-like printing: nested brackets, aligned columns, "..." past 1000
// elements (3 items kept at each edge of every axis).
#include <iomanip>
#include <ostream>
#include <sstream>

#include "tapeflow/core/tensor.hpp"

namespace tapeflow {
namespace {

constexpr int64_t kThreshold = 1000;
constexpr int64_t kEdge = 3;

std::string format(double v, DType t) {
  std::ostringstream os;
  if (t == bool_) return v != 0 ? "true" : "false";
  if (!is_floating(t)) {
    os << static_cast<int64_t>(v);
  } else {
    os << std::setprecision(t == float32 ? 6 : 8) << v;
    std::string s = os.str();
    if (s.find_first_of(".eninf") == std::string::npos) s += ".";
    return s;
  }
  return os.str();
}

struct Printer {
  const std::vector<double>& values;
  const Shape& shape;
  DType dtype;
  bool elide;
  size_t width = 0;

  bool skipped(int64_t i, int64_t n) const {
    return elide && n > 2 * kEdge && i >= kEdge && i < n - kEdge;
  }
  void measure(int64_t axis, int64_t offset) {
    if (axis == shape.size()) {
      width = std::max(width, format(values[offset], dtype).size());
      return;
    }
    const int64_t n = shape[axis];
    const int64_t inner = stride(axis);
    for (int64_t i = 0; i < n; ++i)
      if (!skipped(i, n)) measure(axis + 1, offset + i * inner);
  }
  int64_t stride(int64_t axis) const {
    int64_t s = 1;
    for (int64_t i = axis + 1; i < shape.size(); ++i) s *= shape[i];
    return s;
  }
  void print(std::ostream& os, int64_t axis, int64_t offset, int indent) const {
    if (axis == shape.size()) {
      os << std::setw(static_cast<int>(width)) << format(values[offset], dtype);
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
      print(os, axis + 1, offset + i * inner, indent + 1);
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
  const std::vector<double> values = t.to_vector<double>();
  Printer p{values, t.shape(), t.dtype(), t.numel() > kThreshold};
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
