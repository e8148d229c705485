#pragma once
// What a recorded op hands its own backward pass so that an operand is not
// converted twice (into oneDNN's blocked layouts, or to bfloat16).
#include <string>

#include "tapeflow/core/tensor.hpp"

namespace tapeflow {

/**
 * An operand a kernel converted for its primitive. `source` is the tensor it
 * was converted from, kept alive so that its address identifies it; `layout`
 * is the backend's own description of the bytes in `data`. Holding what the
 * forward saw is also what the tape's saved inputs mean.
 */
struct ConvertedOperand {
  Tensor source, data;
  std::string layout;
};

}  // namespace tapeflow
