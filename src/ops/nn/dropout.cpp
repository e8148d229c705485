// Dropout: a composite of a uniform draw, a comparison and a product, so its
// gradient (mask / keep) comes from the recorded multiply.
#include "tapeflow/nn/dropout.hpp"

#include <string>

#include "ops/apply.hpp"
#include "ops/elementwise_ops.hpp"
#include "tapeflow/creation.hpp"
#include "tapeflow/ops/math.hpp"

namespace tapeflow::nn {

Tensor dropout(const Tensor& x, double rate, bool training,
               const Shape& noise_shape, std::optional<uint64_t> seed) {
  if (!(rate >= 0.0 && rate < 1.0))
    throw ValueError("[dropout] expected rate in [0, 1), got " +
                     std::to_string(rate));
  if (!is_floating(x.dtype()))
    throw DTypeError("[dropout] expected float32 or float64, got " +
                     std::string(dtype_name(x.dtype())));
  const Shape shape = noise_shape.empty() ? x.shape() : noise_shape;
  if (!(broadcast_shapes(shape, x.shape(), "dropout") == x.shape()))
    throw ShapeError("[dropout] expected a noise_shape that broadcasts to " +
                     x.shape().str() + ", got " + shape.str());
  if (!training || rate == 0.0) return x;
  const double keep = 1.0 - rate;
  // Drawn on x's device. A seed gives its own counter stream from 0: the
  // same mask every call.
  const Tensor u = seed
                       ? stateless_random_uniform(shape, *seed, 0.0, 1.0,
                                                  x.dtype(), x.device())
                       : random_uniform(shape, 0.0, 1.0, x.dtype(), x.device());
  const Tensor mask = cast(u < scalar_like(u, keep), x.dtype()) * (1.0 / keep);
  return x * mask;
}

}  // namespace tapeflow::nn
