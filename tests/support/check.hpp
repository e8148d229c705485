#pragma once
// Shared test helpers: closeness checks, float64 gradcheck and the OpCase
// table that drives every op family's forward, strided and gradient tests.
#include <doctest/doctest.h>

#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "tapeflow/tapeflow.hpp"

namespace tpf = tapeflow;

namespace testing {

/** Empty string when a and b match elementwise, else a description. */
std::string mismatch(const tpf::Tensor& a, const tpf::Tensor& b,
                     double rtol = 1e-5, double atol = 1e-6);

#define CHECK_CLOSE(a, b, ...)                                         \
  do {                                                                 \
    const std::string why_ = ::testing::mismatch(a, b, ##__VA_ARGS__); \
    CHECK_MESSAGE(why_.empty(), why_);                                 \
  } while (0)

using Fn = std::function<tpf::Tensor(const std::vector<tpf::Tensor>&)>;

struct GradcheckOptions {
  double eps = 1e-6;
  double atol = 1e-5;
  double rtol = 1e-3;
};

/**
 * Compares the tape's vector-Jacobian product with central finite
 * differences in float64, for a random cotangent. Empty string = agreement.
 */
std::string gradcheck(const Fn& f, const std::vector<tpf::Tensor>& inputs,
                      GradcheckOptions opt = {});

/**
 * gradcheck for float64 Variables f() reads (a layer's weights): the tape's
 * gradient against central differences taken by assigning shifted values.
 */
std::string gradcheck_variables(const std::function<tpf::Tensor()>& f,
                                const std::vector<tpf::Variable>& vars,
                                GradcheckOptions opt = {});

/**
 * The kind of an OpCase row. A degenerate row feeds an op the inputs ops get
 * wrong first: an empty or 0-channel extent, NaN. It gets the same forward,
 * strided, float32 and device checks (NaN matches NaN); its gradient is
 * checked for each input's shape, and by finite differences only where no
 * input holds NaN.
 */
enum class Row { regular, degenerate };

/** A quiet NaN, for degenerate rows' inputs and expected values. */
inline constexpr double kNan = std::numeric_limits<double>::quiet_NaN();

/**
 * One op under test: forward reference, gradient, strided inputs. `fn` also
 * runs on device inputs: a tensor it makes itself (labels, indices) goes to
 * `in[0].device()`.
 */
struct OpCase {
  std::string name;
  Fn fn;
  std::vector<tpf::Tensor> inputs;  // float64
  tpf::Tensor expected;             // hand-computed forward result
  bool differentiable = true;
  Row row = Row::regular;
};

/** A degenerate row (see Row) of `fn` at `inputs`, expecting `expected`. */
OpCase degenerate(std::string name, Fn fn, std::vector<tpf::Tensor> inputs,
                  tpf::Tensor expected, bool differentiable = true);

/**
 * Runs every check of `c` inside a doctest SUBCASE named after it: forward
 * against `expected`, strided inputs, float32 against float64 and a float64
 * gradcheck on the CPU; then, on each device of test_devices()
 * (support/device.hpp), the forward, strided and float32 results and the
 * tape's gradients w.r.t. every input (float64, and float32 within float32
 * precision of the float64 ones) against the CPU's, each on the device.
 */
void run_op_case(const OpCase& c);

/** Same values as x, laid out with non-contiguous strides (rank >= 2). */
tpf::Tensor strided_copy(const tpf::Tensor& x);

/** Float64 zeros of `shape` (degenerate rows' empty inputs and results). */
inline tpf::Tensor zeros64(const tpf::Shape& shape) {
  return tpf::zeros(shape, tpf::float64);
}

/** Reference result: `ref` applied to each element of x on the host. */
tpf::Tensor map1(const tpf::Tensor& x, double (*ref)(double));
/** Reference of a binary op, b broadcast as (1, n) against a (m, n). */
tpf::Tensor map2(const tpf::Tensor& a, const tpf::Tensor& b,
                 double (*ref)(double, double));

/** Float64 tensor of `shape` with values uniform in [lo, hi). */
tpf::Tensor uniform64(const tpf::Shape& shape, double lo = -1.0,
                      double hi = 1.0);

/** f() throws E whose message starts with `prefix` (the "[op]" part). */
template <class E, class F>
void expect_error(F&& f, const std::string& prefix) {
  bool thrown = false;
  try {
    f();
  } catch (const E& e) {
    thrown = true;
    CHECK_MESSAGE(std::string(e.what()).rfind(prefix, 0) == 0, e.what());
  }
  CHECK_MESSAGE(thrown, ("expected an error starting with " + prefix));
}

}  // namespace testing
