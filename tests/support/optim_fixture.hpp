#pragma once
// Shared by the tpf::optim tests: the three-step trajectory every optimizer's
// update formula is checked on, in plain doubles.
#include <vector>

#include "support/check.hpp"

namespace optim_fixture {

namespace optim = tpf::optim;
using Vec = std::vector<double>;

inline const Vec kW0 = {1.0, -2.0, 0.5};
// The gradient of the third element shrinks at step 2, so AMSGrad's vhat
// differs from v.
inline const std::vector<Vec> kG = {
    {0.1, -0.2, 0.3}, {-0.5, 0.4, 0.05}, {0.2, 0.2, -0.7}};

inline tpf::Tensor t64(const Vec& v) {
  return tpf::from_vector(v, {static_cast<int64_t>(v.size())});
}

inline void check_vec(const tpf::Tensor& t, const Vec& expected) {
  CHECK(t.dtype() == tpf::float64);
  CHECK_CLOSE(t, t64(expected), 1e-12, 1e-14);
}

/** Three apply_gradients steps of kG on a float64 Variable from kW0. */
inline tpf::Variable run3(optim::Optimizer& opt) {
  tpf::Variable w(t64(kW0));
  for (const Vec& g : kG) opt.apply_gradients({t64(g)}, {w});
  CHECK(opt.iterations() == 3);
  return w;
}

}  // namespace optim_fixture
