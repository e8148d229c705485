// The public op API on arbitrary bytes. The bytes are a short program over a
// pool of tensors (any dtype; empty, scalar or small; NaN and inf among the
// values): each step picks an op, its operands from the pool and its
// attributes (extents, axes, strides, paddings: small, zero, negative or
// absurd), runs it and puts the result back in the pool. A program may run
// under a GradientTape and end by differentiating, and may write a Variable
// in place between uses. Every call must return a tensor whose size adds up,
// or throw a tapeflow::Error: a crash, a sanitizer report, another exception
// or a hang is a bug in the op.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "tapeflow/tapeflow.hpp"

namespace tpf = tapeflow;

namespace {

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();

/**
 * The program's bytes, read front to back; zeros once they run out. Absurd
 * extents start at 2^42 elements so that any tensor they size is beyond
 * what an allocator hands out (ASan's cap is 2^40 bytes) or overflows: a
 * size in between would be a legitimate multi-GiB tensor, not a bug.
 */
class Program {
 public:
  Program(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  bool done() const { return at_ >= size_; }
  uint8_t byte() { return at_ < size_ ? data_[at_++] : 0; }
  bool flag() { return byte() & 1; }

  int64_t small() { return byte() % 5; }
  int64_t extent() {
    static constexpr std::array<int64_t, 8> odd = {
        -1,
        -3,
        int64_t{1} << 42,
        int64_t{1} << 62,
        kMax,
        kMin,
        6148914691236517206,  // 3 * this wraps to 2
        int64_t{1} << 50};
    const uint8_t b = byte();
    return b < 224 ? b % 5 : odd[b % odd.size()];
  }
  int64_t axis() { return static_cast<int64_t>(byte() % 9) - 4; }
  /** Values, with those that overflow float32 or int32 among them. */
  double value() { return values()[byte() % values().size()]; }
  /**
   * A value for a range's bounds and step: no pair of these spans a range of
   * 2^31 to 2^42 steps (a legitimate multi-GiB tensor).
   */
  double range_value() { return values()[byte() % 12]; }
  tpf::DType dtype() {
    static constexpr std::array<tpf::DType, 6> types = {
        tpf::float32, tpf::float64, tpf::int32,
        tpf::int64,   tpf::bool_,   tpf::string_};
    return types[byte() % types.size()];
  }
  static const std::array<double, 16>& values() {
    static constexpr double inf = std::numeric_limits<double>::infinity();
    static constexpr std::array<double, 16> all = {
        0,   1,    -1,     0.5,   2,    -3.25,        inf,  -inf,
        NAN, -0.0, 1e-300, -1e20, 1e10, 2147483648.0, 3e38, 65536};
    return all;
  }
  std::vector<int64_t> extents(size_t most = 4) {
    std::vector<int64_t> v(byte() % (most + 1));
    for (auto& e : v) e = extent();
    return v;
  }
  std::vector<int64_t> axes() {
    std::vector<int64_t> v(byte() % 3);
    for (auto& a : v) a = axis();
    return v;
  }
  /** A tensor of at most 4^4 elements with values from value(). */
  tpf::Tensor tensor() {
    std::vector<int64_t> dims(byte() % 5);
    int64_t n = 1;
    for (auto& d : dims) n *= (d = small() % 4);
    std::vector<double> values(static_cast<size_t>(n));
    for (auto& v : values) v = value();
    const tpf::DType type = dtype();
    if (type == tpf::string_) {  // text: every op must take it or refuse it
      std::vector<std::string> texts;
      for (double v : values) texts.push_back(std::to_string(v));
      return tpf::from_strings(texts, tpf::Shape(dims));
    }
    return tpf::from_vector(values, tpf::Shape(dims)).cast(type);
  }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t at_ = 0;
};

/**
 * The tensors a program works on; the newest results replace the oldest.
 * Results of more than 4096 elements (broadcast views of absurd extents)
 * stay out: reducing 2^42 elements is slow, not wrong.
 */
struct Pool {
  std::vector<tpf::Tensor> tensors;
  tpf::Variable variable;
  const tpf::Tensor& pick(Program& p) const {
    return tensors[p.byte() % tensors.size()];
  }
  void put(tpf::Tensor t) {
    if (t.numel() > 4096) return;
    if (tensors.size() == 6) tensors.erase(tensors.begin());
    tensors.push_back(std::move(t));
  }
};

/** The shape's element count, computed without wrapping, matches numel().
 * A 0 extent empties the tensor whatever the others are: (2, 2^63-1, 0) is
 * a valid empty shape, so the product is taken only when none is 0. */
void check_size(const tpf::Tensor& t) {
  if (!t.defined()) return;
  const auto dims = t.shape();
  const bool empty = std::find(dims.begin(), dims.end(), 0) != dims.end();
  int64_t n = empty ? 0 : 1;
  for (int64_t d : dims) {
    if (d < 0 || (!empty && __builtin_mul_overflow(n, d, &n))) std::abort();
  }
  if (n != t.numel()) std::abort();
  if (n > 4096) return;
  if (tpf::is_string(t.dtype()))
    (void)t.to_strings();  // reads every element
  else
    (void)t.to_vector<double>();
}

tpf::nn::PoolOptions pool_options(Program& p, size_t rank) {
  tpf::nn::PoolOptions o;
  for (size_t i = 0; i < rank; ++i) o.ksize.push_back(p.extent());
  if (p.flag())
    for (size_t i = 0; i < rank; ++i) o.strides.push_back(p.extent());
  o.padding = p.flag() ? "SAME" : "VALID";
  o.data_format = p.flag() ? "NCHW" : "NHWC";
  o.count_include_pad = p.flag();
  return o;
}

tpf::nn::ConvOptions conv_options(Program& p) {
  tpf::nn::ConvOptions o;
  o.strides = p.extents(2);
  o.dilations = p.extents(2);
  switch (p.byte() % 3) {
    case 0:
      o.padding = "VALID";
      break;
    case 1:
      o.padding = "SAME";
      break;
    default:
      o.padding = tpf::nn::Padding(p.extents(4));
  }
  o.groups = p.extent();
  o.data_format = p.flag() ? "NCHW" : "NHWC";
  return o;
}

using Step = std::function<tpf::Tensor(Program&, Pool&)>;

tpf::Tensor first(const std::vector<tpf::Tensor>& parts) {
  return parts.empty() ? tpf::Tensor() : parts.front();
}

const std::vector<Step>& steps() {
  using namespace tpf;
  static const std::vector<Step> all = {
      // creation
      [](Program& p, Pool&) { return p.tensor(); },
      [](Program& p, Pool&) {
        return full(Shape(p.extents()), p.value(), p.dtype());
      },
      [](Program& p, Pool&) { return eye(p.extent(), p.extent(), p.dtype()); },
      [](Program& p, Pool&) {
        return arange<int64_t>(p.extent(), p.extent(), p.extent(), p.dtype());
      },
      [](Program& p, Pool&) {
        return arange<double>(p.range_value(), p.range_value(), p.range_value(),
                              p.dtype());
      },
      [](Program& p, Pool&) {
        return random_uniform(Shape(p.extents()), p.value(), p.value(),
                              p.dtype());
      },
      [](Program& p, Pool&) {
        return random_normal(Shape(p.extents()), p.value(), p.value(),
                             p.dtype());
      },
      // elementwise
      [](Program& p, Pool& s) { return s.pick(p) + s.pick(p); },
      [](Program& p, Pool& s) { return s.pick(p) - s.pick(p); },
      [](Program& p, Pool& s) { return s.pick(p) * s.pick(p); },
      [](Program& p, Pool& s) { return s.pick(p) / s.pick(p); },
      [](Program& p, Pool& s) { return pow(s.pick(p), s.pick(p)); },
      [](Program& p, Pool& s) { return maximum(s.pick(p), s.pick(p)); },
      [](Program& p, Pool& s) { return minimum(s.pick(p), s.pick(p)); },
      [](Program& p, Pool& s) { return s.pick(p) + p.value(); },
      [](Program& p, Pool& s) { return exp(s.pick(p)); },
      [](Program& p, Pool& s) { return log(s.pick(p)); },
      [](Program& p, Pool& s) { return sqrt(s.pick(p)); },
      [](Program& p, Pool& s) { return relu(s.pick(p)); },
      [](Program& p, Pool& s) { return sigmoid(s.pick(p)); },
      [](Program& p, Pool& s) { return abs(s.pick(p)); },
      [](Program& p, Pool& s) { return sign(s.pick(p)); },
      [](Program& p, Pool& s) { return less(s.pick(p), s.pick(p)); },
      [](Program& p, Pool& s) { return equal(s.pick(p), s.pick(p)); },
      [](Program& p, Pool& s) { return logical_and(s.pick(p), s.pick(p)); },
      [](Program& p, Pool& s) {
        return where(s.pick(p), s.pick(p), s.pick(p));
      },
      [](Program& p, Pool& s) { return clip(s.pick(p), p.value(), p.value()); },
      [](Program& p, Pool& s) { return clip(s.pick(p), s.pick(p), s.pick(p)); },
      [](Program& p, Pool& s) { return cast(s.pick(p), p.dtype()); },
      [](Program& p, Pool& s) { return floordiv(s.pick(p), s.pick(p)); },
      [](Program& p, Pool& s) { return floormod(s.pick(p), s.pick(p)); },
      [](Program& p, Pool& s) { return atan2(s.pick(p), s.pick(p)); },
      [](Program& p, Pool& s) { return round(s.pick(p)); },
      [](Program& p, Pool& s) { return is_finite(s.pick(p)); },
      // reductions
      [](Program& p, Pool& s) { return sum(s.pick(p), p.axes(), p.flag()); },
      [](Program& p, Pool& s) { return mean(s.pick(p), p.axes(), p.flag()); },
      [](Program& p, Pool& s) { return max(s.pick(p), p.axes(), p.flag()); },
      [](Program& p, Pool& s) { return min(s.pick(p), p.axes(), p.flag()); },
      [](Program& p, Pool& s) { return prod(s.pick(p), p.axes(), p.flag()); },
      [](Program& p, Pool& s) { return argmax(s.pick(p), p.axis()); },
      [](Program& p, Pool& s) { return argmin(s.pick(p), p.axis()); },
      [](Program& p, Pool& s) { return sum_to(s.pick(p), Shape(p.extents())); },
      [](Program& p, Pool& s) { return any(s.pick(p), p.axes(), p.flag()); },
      // shapes
      [](Program& p, Pool& s) {
        return reshape(s.pick(p), Shape(p.extents()));
      },
      [](Program& p, Pool& s) { return transpose(s.pick(p), p.axes()); },
      [](Program& p, Pool& s) {
        return concat({s.pick(p), s.pick(p)}, p.axis());
      },
      [](Program& p, Pool& s) {
        return first(split(s.pick(p), p.extent(), p.axis()));
      },
      [](Program& p, Pool& s) {
        return first(split(s.pick(p), p.extents(3), p.axis()));
      },
      [](Program& p, Pool& s) {
        return slice(s.pick(p), p.extents(), p.extents());
      },
      [](Program& p, Pool& s) { return squeeze(s.pick(p), p.axes()); },
      [](Program& p, Pool& s) { return expand_dims(s.pick(p), p.axis()); },
      [](Program& p, Pool& s) {
        return broadcast_to(s.pick(p), Shape(p.extents()));
      },
      [](Program& p, Pool& s) {
        return one_hot(s.pick(p), p.extent(), p.value(), p.value(), p.dtype());
      },
      [](Program& p, Pool& s) {
        return gather(s.pick(p), s.pick(p), p.axis());
      },
      [](Program& p, Pool& s) { return gather_nd(s.pick(p), s.pick(p)); },
      [](Program& p, Pool& s) {
        return scatter_nd(s.pick(p), s.pick(p), Shape(p.extents()));
      },
      [](Program& p, Pool& s) {
        return tensor_scatter_nd_update(s.pick(p), s.pick(p), s.pick(p));
      },
      [](Program& p, Pool& s) {
        return unsorted_segment_sum(s.pick(p), s.pick(p), p.extent());
      },
      // segment_sum's count is the last id + 1: ids clipped, as a value of
      // 2^31 would size a legitimate multi-GiB result.
      [](Program& p, Pool& s) {
        return segment_sum(s.pick(p), clip(s.pick(p), -8.0, 8.0));
      },
      // linear algebra
      [](Program& p, Pool& s) {
        return matmul(s.pick(p), s.pick(p), p.flag(), p.flag());
      },
      [](Program& p, Pool& s) { return matrix_inverse(s.pick(p)); },
      [](Program& p, Pool& s) { return matrix_determinant(s.pick(p)); },
      // nn
      [](Program& p, Pool& s) { return nn::softmax(s.pick(p), p.axis()); },
      [](Program& p, Pool& s) { return nn::log_softmax(s.pick(p), p.axis()); },
      [](Program& p, Pool& s) { return nn::crelu(s.pick(p), p.axis()); },
      [](Program& p, Pool& s) { return nn::gelu(s.pick(p), p.flag()); },
      [](Program& p, Pool& s) { return nn::elu(s.pick(p), p.value()); },
      [](Program& p, Pool& s) {
        return nn::moments(s.pick(p), p.axes(), p.flag()).second;
      },
      [](Program& p, Pool& s) {
        return nn::layer_normalization(s.pick(p), p.axis(), s.pick(p),
                                       s.pick(p), p.value());
      },
      [](Program& p, Pool& s) {
        return nn::batch_normalization(s.pick(p), s.pick(p), s.pick(p),
                                       s.pick(p), s.pick(p), p.value());
      },
      [](Program& p, Pool& s) {
        return nn::dropout(s.pick(p), p.value(), p.flag(), Shape(p.extents()),
                           7);
      },
      [](Program& p, Pool& s) {
        return nn::max_pool1d(s.pick(p), pool_options(p, 1));
      },
      [](Program& p, Pool& s) {
        return nn::max_pool2d(s.pick(p), pool_options(p, 2));
      },
      [](Program& p, Pool& s) {
        return nn::avg_pool2d(s.pick(p), pool_options(p, 2));
      },
      [](Program& p, Pool& s) {
        return nn::avg_pool3d(s.pick(p), pool_options(p, 3));
      },
      [](Program& p, Pool& s) {
        return nn::max_pool2d_with_argmax(s.pick(p), pool_options(p, 2),
                                          p.flag())
            .argmax;
      },
      [](Program& p, Pool& s) {
        return nn::conv1d(s.pick(p), s.pick(p), conv_options(p));
      },
      [](Program& p, Pool& s) {
        return nn::conv2d(s.pick(p), s.pick(p), conv_options(p));
      },
      [](Program& p, Pool& s) {
        return nn::conv2d_relu(s.pick(p), s.pick(p), s.pick(p),
                               conv_options(p));
      },
      [](Program& p, Pool& s) {
        return nn::conv2d_transpose(s.pick(p), s.pick(p), Shape(p.extents()),
                                    conv_options(p));
      },
      [](Program& p, Pool& s) {
        return nn::depthwise_conv2d(s.pick(p), s.pick(p), conv_options(p));
      },
      [](Program& p, Pool& s) {
        return nn::softmax_cross_entropy_with_logits(s.pick(p), s.pick(p));
      },
      [](Program& p, Pool& s) {
        return nn::sparse_softmax_cross_entropy_with_logits(s.pick(p),
                                                            s.pick(p));
      },
      [](Program& p, Pool& s) { return nn::hinge_loss(s.pick(p), s.pick(p)); },
      // in-place writes to the pool's Variable, between its uses
      [](Program& p, Pool& s) {
        s.variable.assign(s.pick(p));
        return Tensor(s.variable);
      },
      [](Program& p, Pool& s) {
        s.variable.assign_add(s.pick(p));
        return Tensor(s.variable);
      },
      [](Program& p, Pool& s) {
        s.variable.assign(transpose(s.variable));
        return Tensor(s.variable);
      },
  };
  return all;
}

/** TPF_FUZZ_TRACE=1: each step's number, the pool it saw and its answer. */
const bool trace = std::getenv("TPF_FUZZ_TRACE") != nullptr;

void trace_step(size_t index, const Pool& pool) {
  std::fprintf(stderr, "step %zu on", index);
  for (const tpf::Tensor& t : pool.tensors)
    std::fprintf(stderr, " %s%s",
                 std::string(tpf::dtype_name(t.dtype())).c_str(),
                 t.shape().str().c_str());
  std::fprintf(stderr, "\n");
}

/** Runs one step; a tapeflow::Error is an answer, anything else escapes. */
void run_step(Program& p, Pool& pool) {
  const size_t index = p.byte() % steps().size();
  if (trace) trace_step(index, pool);
  try {
    tpf::Tensor t = steps()[index](p, pool);
    check_size(t);
    if (trace && t.defined())
      std::fprintf(stderr, "  -> %s\n", t.shape().str().c_str());
    if (t.defined()) pool.put(std::move(t));
  } catch (const tpf::Error& e) {
    if (trace) std::fprintf(stderr, "  -> %s\n", e.what());
  }
}

/** d sum(target) / d each float tensor the program started with. */
void differentiate(tpf::GradientTape& tape, const Pool& pool,
                   const std::vector<tpf::Tensor>& sources) {
  try {
    const tpf::Tensor target = tpf::sum(pool.tensors.back());
    for (const tpf::Tensor& g : tape.gradient(target, sources)) check_size(g);
  } catch (const tpf::Error&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Program program(data, size);
  const uint8_t mode = program.byte();
  Pool pool;
  try {
    pool.tensors = {program.tensor(), program.tensor()};
    pool.variable = tpf::Variable(program.tensor());
  } catch (const tpf::Error&) {
    return 0;
  }
  std::vector<tpf::Tensor> sources;
  for (const tpf::Tensor& t : pool.tensors)
    if (tpf::is_floating(t.dtype())) sources.push_back(t);

  std::optional<tpf::GradientTape> tape;
  if (mode & 1) {
    tape.emplace(/*persistent=*/(mode & 2) != 0);
    for (const tpf::Tensor& t : sources) tape->watch(t);
  }
  for (int steps_run = 0; steps_run < 16 && !program.done(); ++steps_run)
    run_step(program, pool);
  if (tape && !sources.empty()) differentiate(*tape, pool, sources);
  return 0;
}
