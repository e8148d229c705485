#include "tapeflow/core/shape.hpp"

#include <ostream>
#include <sstream>

#include "core/op_error.hpp"
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

void Shape::throw_rank(int64_t rank) {
  throw ShapeError("[shape] expected rank <= " + std::to_string(kMaxRank) +
                   ", got " + std::to_string(rank));
}

std::string Shape::str() const {
  std::ostringstream os;
  os << '(';
  for (int i = 0; i < rank_; ++i) os << (i ? ", " : "") << dims_[i];
  os << (rank_ == 1 ? ",)" : ")");
  return os.str();
}

std::ostream& operator<<(std::ostream& os, const Shape& s) {
  return os << s.str();
}

std::string_view dtype_name(DType t) {
  constexpr std::string_view names[] = {"bool",    "int32",   "int64",
                                        "float32", "float64", "string"};
  return names[static_cast<int>(t)];
}
std::ostream& operator<<(std::ostream& os, DType t) {
  return os << dtype_name(t);
}

void Device::throw_bad_index(int i) {
  throw op_error<DeviceError>("Device::cuda",
                              "expected a device index in [0, 32767], got ", i);
}

std::string Device::str() const {
  return is_cpu() ? "cpu:" + std::to_string(index)
                  : "cuda:" + std::to_string(index);
}
std::ostream& operator<<(std::ostream& os, Device d) {
  return os << d.str();
}

}  // namespace tapeflow
