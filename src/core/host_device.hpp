#pragma once
// TPF_HOST_DEVICE marks the functions both backends compile: g++ for the CPU
// kernels (and CI's tests of them), nvcc for the CUDA kernels.
#ifdef __CUDACC__
#define TPF_HOST_DEVICE __host__ __device__
#else
#define TPF_HOST_DEVICE
#endif
