#pragma once
// Embedding (Keras'): integer ids -> rows of a trainable table.
#include <cstdint>
#include <string>

#include "tapeflow/nn/initializers.hpp"
#include "tapeflow/nn/module.hpp"

namespace tapeflow::nn {

struct EmbeddingOptions {
  Initializer embeddings_initializer = random_uniform_initializer();
  /** Id 0 is padding: output_mask() marks it for the recurrent layers. */
  bool mask_zero = false;
  DType dtype = float32;
  std::string name = "";
};

/**
 * ids (...) int32/int64 in [0, input_dim) -> (..., output_dim); weight
 * "embedding/embeddings" (input_dim, output_dim). The gradient is a gather's:
 * a scatter-add of the incoming rows into the table's shape.
 */
class Embedding : public Module {
 public:
  Embedding(int64_t input_dim, int64_t output_dim,
            EmbeddingOptions options = {});
  Tensor forward(const Tensor& ids) override;
  /** ids != 0 with mask_zero, else none. */
  Tensor output_mask(const Tensor& ids, const Tensor& mask) const override;
  const Variable& embeddings() const { return embeddings_; }

 private:
  int64_t input_dim_, output_dim_;
  EmbeddingOptions options_;
  Variable embeddings_;
};

}  // namespace tapeflow::nn
