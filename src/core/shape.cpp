#include "tapeflow/core/shape.hpp"

#include <ostream>
#include <sstream>

#include "tapeflow/core/device.hpp"
#include "tapeflow/core/dtype.hpp"
#include "tapeflow/core/error.hpp"

namespace tapeflow {

Shape::Shape(std::initializer_list<int64_t> dims) {
  for (int64_t d : dims) push_back(d);
}
Shape::Shape(const std::vector<int64_t>& dims) {
  for (int64_t d : dims) push_back(d);
}

void Shape::push_back(int64_t d) {
  if (rank_ == kMaxRank)
    throw ShapeError("[shape] expected rank <= " + std::to_string(kMaxRank) +
                     ", got more dimensions");
  dims_[rank_++] = d;
}

void Shape::resize(int64_t n, int64_t value) {
  if (n > kMaxRank)
    throw ShapeError("[shape] expected rank <= " + std::to_string(kMaxRank) +
                     ", got " + std::to_string(n));
  for (int64_t i = rank_; i < n; ++i) dims_[i] = value;
  rank_ = static_cast<int8_t>(n);
}

int64_t Shape::numel() const {
  int64_t n = 1;
  for (int64_t d : *this) n *= d;
  return n;
}

std::string Shape::str() const {
  std::ostringstream os;
  os << '(';
  for (int i = 0; i < rank_; ++i) os << (i ? ", " : "") << dims_[i];
  os << (rank_ == 1 ? ",)" : ")");
  return os.str();
}

bool operator==(const Shape& a, const Shape& b) {
  if (a.rank_ != b.rank_) return false;
  for (int i = 0; i < a.rank_; ++i)
    if (a.dims_[i] != b.dims_[i]) return false;
  return true;
}

std::ostream& operator<<(std::ostream& os, const Shape& s) {
  return os << s.str();
}

Shape contiguous_strides(const Shape& s) {
  Shape st;
  st.resize(s.size());
  int64_t acc = 1;
  for (int64_t i = s.size() - 1; i >= 0; --i) {
    st[i] = acc;
    acc *= s[i] > 0 ? s[i] : 1;
  }
  return st;
}

std::string_view dtype_name(DType t) {
  constexpr std::string_view names[] = {"bool", "int32", "int64", "float32",
                                        "float64"};
  return names[static_cast<int>(t)];
}
std::ostream& operator<<(std::ostream& os, DType t) {
  return os << dtype_name(t);
}

std::string Device::str() const {
  return is_cpu() ? "cpu:" + std::to_string(index)
                  : "cuda:" + std::to_string(index);
}
std::ostream& operator<<(std::ostream& os, Device d) { return os << d.str(); }

}  // namespace tapeflow
