#pragma once
#include <string>

namespace tapeflow {

/**
 * dlopens `file` (RTLD_NOW | RTLD_LOCAL) from libtapeflow.so's directory,
 * else through the library search path; null with dlerror's text in `error`
 * when neither works. The optional parts of tapeflow live in such modules,
 * loaded on first use.
 */
void* open_module(const char* file, std::string& error);

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
