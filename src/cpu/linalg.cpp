// matrix_inverse and matrix_determinant through xtensor-blas (LAPACK getrf /
// getri), one matrix of the batch at a time.
// clang-format off
#include "cpu/xsimd_config.hpp"  // first: it configures the xtensor headers
// clang-format on
#include <stdexcept>
#include <xtensor-blas/xlinalg.hpp>
#include <xtensor/xadapt.hpp>
#include <xtensor/xnoalias.hpp>

#include "core/creation_internal.hpp"
#include "core/dtype_dispatch.hpp"
#include "ops/linalg_ops.hpp"

namespace tapeflow::cpu {
namespace {

template <class T, class Fn>
void for_each_matrix(const Tensor& input, Fn&& fn) {
  const Tensor x = materialize(input);
  const int64_t n = x.shape()[x.rank() - 1];
  int64_t count = 1;  // the batch, also when its matrices are 0x0
  for (int64_t i = 0; i + 2 < x.rank(); ++i) count *= x.shape()[i];
  const T* p = static_cast<const T*>(x.raw_data());
  const std::array<size_t, 2> shape = {size_t(n), size_t(n)};
  for (int64_t k = 0; k < count; ++k)
    fn(k, xt::adapt(p + k * n * n, size_t(n * n), xt::no_ownership(), shape),
       n);
}

void inverse(const MatrixInverse& op, Inputs in, const Outputs& outs) {
  Tensor& out = outs[0];
  dispatch_floating(in[0].dtype(), op.name, [&](auto tag) {
    using T = decltype(tag);
    T* o = static_cast<T*>(out.raw_data());
    for_each_matrix<T>(in[0], [&](int64_t k, const auto& m, int64_t n) {
      if (n == 0) return;  // a 0x0 inverse has nothing to write
      try {
        auto inv = xt::linalg::inv(m);
        auto dst = xt::adapt(o + k * n * n, size_t(n * n), xt::no_ownership(),
                             std::array<size_t, 2>{size_t(n), size_t(n)});
        xt::noalias(dst) = inv;
      } catch (const std::runtime_error&) {
        throw ValueError(
            "[matrix_inverse] expected invertible matrices, got a "
            "singular one at batch index " +
            std::to_string(k));
      }
    });
  });
}

void determinant(const MatrixDeterminant& op, Inputs in, const Outputs& outs) {
  Tensor& out = outs[0];
  dispatch_floating(in[0].dtype(), op.name, [&](auto tag) {
    using T = decltype(tag);
    T* o = static_cast<T*>(out.raw_data());
    for_each_matrix<T>(in[0], [&](int64_t k, const auto& m, int64_t n) {
      o[k] = n == 0 ? T(1) : T(xt::linalg::det(m));  // the empty product
    });
  });
}

}  // namespace

void register_linalg(Registry& r) {
  r.set<MatrixInverse>(DeviceType::cpu, inverse, "lapack");
  r.set<MatrixDeterminant>(DeviceType::cpu, determinant, "lapack");
}

}  // namespace tapeflow::cpu
