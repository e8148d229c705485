#pragma once
#include <string>

namespace tapeflow {

/** Loads and registers libtapeflow_cuda once; a failure is remembered. */
void load_cuda_backend();
/** Why the CUDA backend is not loaded (empty when it is). */
const std::string& cuda_load_error();

}  // namespace tapeflow
