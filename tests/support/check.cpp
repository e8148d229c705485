#include "support/check.hpp"

#include <cmath>
#include <sstream>

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
      os << "element " << i << ": " << va[i] << " vs " << vb[i] << "\n"
         << a << "\n"
         << b;
      return os.str();
    }
  }
  return "";
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

    if (c.differentiable) {
      const std::string why = gradcheck(c.fn, c.inputs);
      CHECK_MESSAGE(why.empty(), c.name << ": " << why);
    }
  }
}

}  // namespace testing
