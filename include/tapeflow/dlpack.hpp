#pragma once
// Zero-copy tensor exchange with other frameworks through DLPack 0.6
// (NumPy's np.from_dlpack, PyTorch, JAX, CuPy). Include <dlpack/dlpack.h>
// (Debian: libdlpack-dev) to read the fields of a DLManagedTensor.
//
// dtypes: bool_ <-> uint8 (DLPack 0.6 has no bool; from_dlpack also takes
// DLPack 0.8's kDLBool), int32, int64, float32, float64; string_ and DLPack
// types tapeflow lacks (float16, bfloat16, int8, complex, vector lanes) are
// refused. Devices: kDLCPU (and host memory pinned or managed by CUDA) <->
// the CPU; kDLCUDA device i <-> cuda:i.
//
// Streams: DLPack 0.6 names none, so GPU memory changes hands only once the
// work writing it is done. to_dlpack synchronizes the tensor's GPU; a
// producer handing memory to from_dlpack must have finished writing it
// (e.g. torch.cuda.synchronize()) first.
#include "tapeflow/core/tensor.hpp"

struct DLManagedTensor;

namespace tapeflow {

/**
 * `t` as a DLManagedTensor sharing its buffer (no copy): data is the
 * buffer's start, byte_offset the view's offset, strides in elements. A CUDA
 * tensor's GPU is synchronized first (throwing, as synchronize does, the
 * data errors its kernels reported). The buffer stays alive until the
 * consumer calls `deleter`, exactly once. A Variable written in place while
 * an export holds its buffer moves to a fresh one (copy on write): the
 * export keeps the values it saw. DTypeError
 * "[to_dlpack] ..." for a string tensor.
 */
DLManagedTensor* to_dlpack(const Tensor& t);

/**
 * A tensor over the memory of `managed` (no copy), which the producer must
 * have finished writing (synchronized its device): tapeflow's kernels read
 * it on their own stream. `managed->deleter` is called once the last tensor
 * or view onto that memory is gone and, on a GPU, the work queued there is
 * done (at once for a tensor without elements). On error (DTypeError,
 * DeviceError, ValueError, each "[from_dlpack] ...": a dtype or device tapeflow
 * lacks, negative strides, a rank above 8, uint8 values other than 0 and 1)
 * nothing is taken: the caller still owns `managed`.
 */
Tensor from_dlpack(DLManagedTensor* managed);

}  // namespace tapeflow
