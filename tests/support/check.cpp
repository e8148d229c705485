#include "support/check.hpp"

#include <cmath>
#include <cstdint>
#include <exception>
#include <iomanip>
#include <iostream>
#include <sstream>

#include "support/device.hpp"

namespace testing {

std::string mismatch(const tpf::Tensor& a, const tpf::Tensor& b, double rtol,
                     double atol) {
  if (!a.defined() || !b.defined())
    return a.defined() == b.defined() ? "" : "one tensor is undefined";
  if (!(a.shape() == b.shape()))
    return "shape " + a.shape().str() + " != " + b.shape().str();
  const auto va = a.to_vector<double>(), vb = b.to_vector<double>();
  for (size_t i = 0; i < va.size(); ++i) {
    const bool both_nan = std::isnan(va[i]) && std::isnan(vb[i]);
    const bool same_inf = std::isinf(va[i]) && va[i] == vb[i];
    if (both_nan || same_inf) continue;
    if (!(std::abs(va[i] - vb[i]) <= atol + rtol * std::abs(vb[i]))) {
      std::ostringstream os;
      os << "element " << i << ": " << std::setprecision(17) << va[i] << " vs "
         << vb[i] << std::setprecision(6) << "\n"
         << a << "\n"
         << b;
      return os.str();
    }
  }
  return "";
}

tpf::Tensor map1(const tpf::Tensor& x, double (*ref)(double)) {
  auto v = x.to_vector<double>();
  for (auto& e : v) e = ref(e);
  return tpf::from_vector(v, x.shape());
}

tpf::Tensor map2(const tpf::Tensor& a, const tpf::Tensor& b,
                 double (*ref)(double, double)) {
  auto va = a.to_vector<double>();
  const auto vb = b.to_vector<double>();
  for (size_t i = 0; i < va.size(); ++i) va[i] = ref(va[i], vb[i % vb.size()]);
  return tpf::from_vector(va, a.shape());
}

tpf::Tensor uniform64(const tpf::Shape& shape, double lo, double hi) {
  return tpf::random_uniform(shape, lo, hi, tpf::float64);
}

tpf::Tensor strided_copy(const tpf::Tensor& x) {
  if (x.rank() < 2) return x;
  std::vector<int64_t> perm(x.rank());
  for (int64_t i = 0; i < x.rank(); ++i) perm[i] = x.rank() - 1 - i;
  return tpf::transpose(tpf::transpose(x, perm).contiguous(), perm);
}

namespace {

double weighted_sum(const Fn& f, const std::vector<tpf::Tensor>& xs,
                    const std::vector<double>& v) {
  const auto y = f(xs).to_vector<double>();
  double s = 0;
  for (size_t i = 0; i < y.size(); ++i) s += y[i] * v[i];
  return s;
}

}  // namespace

std::string gradcheck(const Fn& f, const std::vector<tpf::Tensor>& inputs,
                      GradcheckOptions opt) {
  std::vector<tpf::Tensor> xs;
  for (const auto& x : inputs) xs.push_back(x.cast(tpf::float64).contiguous());
  tpf::GradientTape tape;
  for (const auto& x : xs) tape.watch(x);
  const tpf::Tensor y = f(xs);
  const tpf::Tensor v = uniform64(y.shape());
  const auto analytic = tape.gradient(y, xs, {v.cast(y.dtype())});
  const std::vector<double> vv = v.to_vector<double>();

  for (size_t k = 0; k < xs.size(); ++k) {
    std::vector<double> base = xs[k].to_vector<double>();
    std::vector<double> numeric(base.size());
    for (size_t i = 0; i < base.size(); ++i) {
      auto shifted = [&](double delta) {
        std::vector<double> p = base;
        p[i] += delta;
        std::vector<tpf::Tensor> ys = xs;
        ys[k] = tpf::from_vector(p, xs[k].shape());
        return weighted_sum(f, ys, vv);
      };
      numeric[i] = (shifted(opt.eps) - shifted(-opt.eps)) / (2 * opt.eps);
    }
    const tpf::Tensor n = tpf::from_vector(numeric, xs[k].shape());
    const tpf::Tensor a =
        analytic[k].defined() ? analytic[k] : tpf::zeros_like(xs[k]);
    const std::string why = mismatch(a, n, opt.rtol, opt.atol);
    if (!why.empty())
      return "input " + std::to_string(k) + " (analytic vs numeric): " + why;
  }
  return "";
}

std::string gradcheck_variables(const std::function<tpf::Tensor()>& f,
                                const std::vector<tpf::Variable>& vars,
                                GradcheckOptions opt) {
  tpf::GradientTape tape;
  const tpf::Tensor y = f();
  const tpf::Tensor v = uniform64(y.shape());
  const std::vector<tpf::Tensor> sources(vars.begin(), vars.end());
  const auto analytic = tape.gradient(y, sources, {v.cast(y.dtype())});
  const std::vector<double> vv = v.to_vector<double>();
  const auto weighted = [&] {
    const auto ys = f().to_vector<double>();
    double s = 0;
    for (size_t i = 0; i < ys.size(); ++i) s += ys[i] * vv[i];
    return s;
  };
  for (size_t k = 0; k < vars.size(); ++k) {
    tpf::Variable var = vars[k];
    const std::vector<double> base = var.to_vector<double>();
    std::vector<double> numeric(base.size());
    for (size_t i = 0; i < base.size(); ++i) {
      auto shifted = [&](double delta) {
        std::vector<double> p = base;
        p[i] += delta;
        var.assign(tpf::from_vector(p, var.shape()).to(var.device()));
        return weighted();
      };
      numeric[i] = (shifted(opt.eps) - shifted(-opt.eps)) / (2 * opt.eps);
    }
    var.assign(tpf::from_vector(base, var.shape()).to(var.device()));
    const tpf::Tensor a =
        analytic[k].defined() ? analytic[k] : tpf::zeros_like(var);
    const std::string why =
        mismatch(a, tpf::from_vector(numeric, var.shape()), opt.rtol, opt.atol);
    if (!why.empty())
      return "variable " + std::to_string(k) + " (analytic vs numeric): " + why;
  }
  return "";
}

namespace {

/** FNV-1a: a cotangent seed per case that does not touch the global stream. */
uint64_t seed_of(const std::string& name) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char ch : name) h = (h ^ ch) * 1099511628211ull;
  return h;
}

/** The tape's gradient of f at xs, w.r.t. every x, for cotangent v. */
std::vector<tpf::Tensor> tape_gradient(const Fn& f,
                                       const std::vector<tpf::Tensor>& xs,
                                       const tpf::Tensor& v) {
  tpf::GradientTape tape;
  for (const auto& x : xs) tape.watch(x);
  const tpf::Tensor y = f(xs);
  return tape.gradient(y, xs, {v.cast(y.dtype()).to(y.device())});
}

/** Empty when t lives on dev and its host copy matches want. */
std::string device_mismatch(const char* what, const tpf::Tensor& t,
                            const tpf::Tensor& want, tpf::Device dev,
                            double rtol, double atol) {
  if (t.defined() && t.device() != dev)
    return std::string(what) + ": on " + t.device().str() + ", expected " +
           dev.str();
  const std::string why = mismatch(t.defined() ? t.cpu() : t, want, rtol, atol);
  return why.empty() ? "" : std::string(what) + " (device vs cpu): " + why;
}

/**
 * c on `dev` against the CPU results y (float64 inputs) and y32 (float32):
 * forward, strided forward, float32 forward and the tape's gradient w.r.t.
 * every input for the same cotangent, in float64 and float32 (no finite
 * differences: the CPU pass has checked the CPU gradient already).
 */
void check_on_device(const OpCase& c, tpf::Device dev, const tpf::Tensor& y,
                     const tpf::Tensor& y32) {
  constexpr double rtol64 = 1e-9, atol64 = 1e-12;
  // float32: the tolerance test_cuda held reductions and matmul to; float32
  // gradients (a chain of float32 ops) against float64 ones, looser.
  constexpr double rtol32 = 1e-4, atol32 = 1e-6;
  constexpr double rtol32_grad = 1e-3, atol32_grad = 1e-4;
  auto report = [&](const std::string& why) {
    CHECK_MESSAGE(why.empty(), c.name << " on " << dev.str() << ": " << why);
  };
  try {
    std::vector<tpf::Tensor> xs, strided, singles;
    for (const auto& x : c.inputs) {
      xs.push_back(x.to(dev));
      strided.push_back(strided_copy(xs.back()));
      singles.push_back(x.dtype() == tpf::float64 ? xs.back().cast(tpf::float32)
                                                  : xs.back());
    }
    report(device_mismatch("forward", c.fn(xs), y, dev, rtol64, atol64));
    report(device_mismatch("strided forward", c.fn(strided), y, dev, rtol64,
                           atol64));
    if (tpf::is_floating(y.dtype()))
      report(device_mismatch("float32 forward", c.fn(singles), y32, dev, rtol32,
                             atol32));

    if (c.differentiable) {
      std::vector<tpf::Tensor> host;
      for (const auto& x : c.inputs)
        host.push_back(x.cast(tpf::float64).contiguous());
      std::vector<tpf::Tensor> on_dev;
      for (const auto& x : host) on_dev.push_back(x.to(dev));
      const tpf::Tensor v = tpf::stateless_random_uniform(
          y.shape(), seed_of(c.name), -1.0, 1.0, tpf::float64);
      const auto want = tape_gradient(c.fn, host, v);
      const auto got = tape_gradient(c.fn, on_dev, v.to(dev));
      for (size_t k = 0; k < want.size(); ++k) {
        const std::string what = "gradient " + std::to_string(k);
        report(device_mismatch(what.c_str(), got[k], want[k], dev, rtol64,
                               atol64));
      }
      // The float32 kernels a training step runs, against the float64
      // gradient within float32 precision.
      if (tpf::is_floating(y.dtype())) {
        std::vector<tpf::Tensor> on_dev32;
        for (const auto& x : on_dev) on_dev32.push_back(x.cast(tpf::float32));
        const auto got32 = tape_gradient(c.fn, on_dev32, v.to(dev));
        for (size_t k = 0; k < want.size(); ++k) {
          const std::string what = "float32 gradient " + std::to_string(k);
          const tpf::Tensor g =
              got32[k].defined() ? got32[k].cast(tpf::float64) : got32[k];
          report(device_mismatch(what.c_str(), g, want[k], dev, rtol32_grad,
                                 atol32_grad));
        }
      }
    }
  } catch (const std::exception& e) {
    FAIL_CHECK(c.name << " on " << dev.str()
                      << " threw: " << std::string(e.what()));
  }
}

/** c on each device of test_devices(); fails c when the one asked is missing.
 */
void check_on_devices(const OpCase& c, const tpf::Tensor& y,
                      const tpf::Tensor& y32) {
  const TestDevices& d = test_devices();
  if (!d.error.empty()) {
    FAIL_CHECK(c.name << ": device pass: " << d.error);
    return;
  }
  static const bool announced = [&] {
    for (const auto dev : d.devices)
      std::cerr << "[run_op_case] device pass on " << dev.str() << " ("
                << d.backend << " backend)\n";
    return true;
  }();
  (void)announced;
  for (const auto dev : d.devices) check_on_device(c, dev, y, y32);
}

bool holds_nan(const std::vector<tpf::Tensor>& xs) {
  for (const auto& x : xs)
    for (double v : x.to_vector<double>())
      if (std::isnan(v)) return true;
  return false;
}

/** The tape's gradient w.r.t. each input has that input's shape. */
void check_gradient_shapes(const OpCase& c) {
  std::vector<tpf::Tensor> xs;
  for (const auto& x : c.inputs) xs.push_back(x.cast(tpf::float64));
  const tpf::Tensor y = c.fn(xs);
  const auto grads =
      tape_gradient(c.fn, xs, tpf::ones(y.shape(), tpf::float64));
  for (size_t k = 0; k < grads.size(); ++k)
    if (grads[k].defined())
      CHECK_MESSAGE(grads[k].shape() == xs[k].shape(),
                    c.name << ": gradient " << k << " has shape "
                           << grads[k].shape().str() << ", input "
                           << xs[k].shape().str());
}

}  // namespace

OpCase degenerate(std::string name, Fn fn, std::vector<tpf::Tensor> inputs,
                  tpf::Tensor expected, bool differentiable) {
  return OpCase{std::move(name),     std::move(fn),  std::move(inputs),
                std::move(expected), differentiable, Row::degenerate};
}

void run_op_case(const OpCase& c) {
  SUBCASE(c.name.c_str()) {
    const tpf::Tensor y = c.fn(c.inputs);
    if (c.expected.defined()) CHECK_CLOSE(y, c.expected);

    // The same values through non-contiguous (transposed) layouts.
    std::vector<tpf::Tensor> strided;
    for (const auto& x : c.inputs) strided.push_back(strided_copy(x));
    CHECK_CLOSE(c.fn(strided), y);

    // float32 agrees with float64 to float32 precision.
    std::vector<tpf::Tensor> singles;
    for (const auto& x : c.inputs)
      singles.push_back(x.dtype() == tpf::float64 ? x.cast(tpf::float32) : x);
    const tpf::Tensor y32 = c.fn(singles);
    if (tpf::is_floating(y.dtype())) {
      CHECK(y32.dtype() == tpf::float32);
      CHECK_CLOSE(y32.cast(tpf::float64), y, 1e-4, 1e-5);
    }

    if (c.differentiable && c.row == Row::degenerate) check_gradient_shapes(c);
    if (c.differentiable && !holds_nan(c.inputs)) {
      const std::string why = gradcheck(c.fn, c.inputs);
      CHECK_MESSAGE(why.empty(), c.name << ": " << why);
    }

    // The same checks on every other device, against the CPU's results.
    check_on_devices(c, y, y32);
  }
}

}  // namespace testing
