#pragma once
// Include before any xtensor/xsimd header. Pins xtensor's container and
// allocator types so they depend neither on -march (xsimd's default alignment
// is 16/32/64 for sse2/avx2/avx512) nor on the compiler (g++ or nvcc); a -D
// flag cannot carry the comma through nvcc.
#ifndef XTENSOR_USE_XSIMD
#define XTENSOR_USE_XSIMD
#endif
#define XTENSOR_DEFAULT_ALIGNMENT 64
#define XTENSOR_DEFAULT_ALLOCATOR(T) xsimd::aligned_allocator<T, 64>
#include <xsimd/xsimd.hpp>
