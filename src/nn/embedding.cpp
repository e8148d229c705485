#include "tapeflow/nn/layers/embedding.hpp"

#include "core/op_error.hpp"
#include "ops/composite.hpp"
#include "tapeflow/creation.hpp"
#include "tapeflow/ops/math.hpp"
#include "tapeflow/ops/shape.hpp"

namespace tapeflow::nn {

Embedding::Embedding(int64_t input_dim, int64_t output_dim,
                     EmbeddingOptions options)
    : Module("embedding", options.name),
      input_dim_(input_dim),
      output_dim_(output_dim),
      options_(std::move(options)) {
  if (input_dim <= 0 || output_dim <= 0)
    throw op_error<ValueError>(name(),
                               "expected input_dim and output_dim > 0, got ",
                               input_dim, " and ", output_dim);
  if (!is_floating(options_.dtype))
    throw op_error<DTypeError>(name(), "expected a floating dtype, got ",
                               dtype_name(options_.dtype));
  // Built now: the table's shape does not depend on the ids.
  embeddings_ = add_weight("embeddings", options_.embeddings_initializer(
                                             {input_dim, output_dim}, input_dim,
                                             output_dim, options_.dtype));
  mark_built();
}

Tensor Embedding::forward(const Tensor& ids) {
  if (ids.dtype() != int32 && ids.dtype() != int64)
    throw op_error<DTypeError>(name(), "expected int32 or int64 ids, got ",
                               dtype_name(ids.dtype()));
  // gather range-checks every id: "[embedding] gather: expected indices in
  // [0, 100), got 103 at position 5".
  return composite(name(), [&] {
    return gather(embeddings_, ids.to(embeddings_.device()), 0);
  });
}

Tensor Embedding::output_mask(const Tensor& ids, const Tensor&) const {
  if (!options_.mask_zero) return {};
  return not_equal(ids, zeros_like(ids));
}

}  // namespace tapeflow::nn
