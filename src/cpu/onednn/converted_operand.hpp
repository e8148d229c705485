#pragma once
// What a oneDNN kernel leaves for a later pass of the same op so that an
// operand is not converted twice (into oneDNN's blocked layouts, or to
// bfloat16): the payload of a recorded conv or matmul.
#include <span>
#include <string>

#include "core/payload.hpp"
#include "core/small_vector.hpp"
#include "tapeflow/core/tensor.hpp"

namespace tapeflow::cpu {

/**
 * An operand a kernel converted for its primitive. `source` is the tensor it
 * was converted from, kept alive so that its address identifies it; `layout`
 * is the kernel's own description of the bytes in `data`. Holding what the
 * forward saw is also what the tape's saved inputs mean.
 */
struct ConvertedOperand {
  Tensor source, data;
  std::string layout;
};

/** Converted operands of one pass, keyed by their operand type. */
class ConvertedOperands final : public Payload {
 public:
  explicit ConvertedOperands(bool bf16) : Payload(key(bf16)) {}
  static PayloadKey key(bool bf16) { return {Device::cpu(), bf16 ? 1 : 0}; }
  SmallVector<ConvertedOperand, 2> operands;
};

/** The converted operands `p` holds for a pass of operand type `bf16`. */
inline std::span<const ConvertedOperand> converted_in(const PayloadPtr& p,
                                                      bool bf16) {
  const auto* c =
      payload_as<ConvertedOperands>(p, ConvertedOperands::key(bf16));
  if (!c) return {};
  return {c->operands.begin(), c->operands.size()};
}

}  // namespace tapeflow::cpu
