#pragma once
#include <string>

namespace tapeflow {

/** Loads and registers libtapeflow_cuda once; a failure is remembered. */
void load_cuda_backend();
/** Why the CUDA backend is not loaded (empty when it is). */
const std::string& cuda_load_error();
/**
 * Whether load_cuda_backend has run (loaded or not): from then on the CUDA
 * driver has read CUDA_VISIBLE_DEVICES, or never will in this process.
 */
bool cuda_load_attempted();

}  // namespace tapeflow
