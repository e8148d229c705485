#pragma once
// Per-device CUDA state shared by every kernel file: the current device, the
// one non-blocking stream per device that carries every kernel, cuBLAS call
// and copy (legacy-stream work would not be ordered against it), and the
// cuBLAS handles bound to that stream.
#include <cublas_v2.h>
#include <cuda_runtime.h>

namespace tapeflow::cuda {

/**
 * Makes `device` current (cudaSetDevice only when it changes on this thread)
 * and returns its stream. Every launch goes `<<<grid, block, smem, stream>>>`.
 */
cudaStream_t activate(int device);

/**
 * Makes `device` current and returns this thread's cuBLAS handle for it,
 * bound to activate(device)'s stream and to a workspace from the device's
 * arena (32 MiB on sm_90 and newer, 4 MiB below: CUDA.md §2).
 */
cublasHandle_t cublas(int device);

}  // namespace tapeflow::cuda
