#pragma once
#include <utility>
#include <vector>

#include "tapeflow/core/tensor.hpp"
#include "tapeflow/ops/reduce.hpp"

// Gradient clipping with TensorFlow's semantics. Built from public ops, so a
// live tape records (and differentiates) them. Undefined tensors in a list
// stay undefined.
namespace tapeflow::optim {

/** min(max(t, lo), hi); ValueError when lo > hi. */
Tensor clip_by_value(const Tensor& t, double lo, double hi);
std::vector<Tensor> clip_by_value(const std::vector<Tensor>& ts, double lo,
                                  double hi);

/**
 * t * clip_norm / max(||t||_2, clip_norm), the norm taken over `axes`
 * (all when empty); ValueError when clip_norm < 0.
 */
Tensor clip_by_norm(const Tensor& t, double clip_norm, const Axes& axes = {});

/** sqrt(sum over tensors of sum(t^2)); a float32 zero for an empty list. */
Tensor global_norm(const std::vector<Tensor>& ts);

/**
 * scale = clip_norm * min(1 / global_norm, 1 / clip_norm) (NaN when the norm
 * is not finite); returns ({t * scale}, global_norm). `use_norm`, when
 * defined, replaces the computed global norm.
 */
std::pair<std::vector<Tensor>, Tensor> clip_by_global_norm(
    const std::vector<Tensor>& ts, double clip_norm,
    const Tensor& use_norm = Tensor());

}  // namespace tapeflow::optim
