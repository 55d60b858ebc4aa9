// The instruction-set forms of the fp16 array conversions (core/dtype_arrays.h),
// internal to dtype_arrays.cpp, which calls the one core/kernel_set.h chose.
// Same contracts, shapes and bits as floats_to_halves / halves_to_floats.
//   *_avx2    AVX2 + F16C (dtype_arrays_avx2.cpp)
//   *_avx512  AVX-512 F (dtype_arrays_avx512.cpp)
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/simd_target.h"

namespace tqlab::simd {

#if TQLAB_X86_KERNELS
void floats_to_halves_avx2(std::size_t n, const float* in, std::uint16_t* out);
void halves_to_floats_avx2(std::size_t n, const std::uint16_t* in, float* out);
void floats_to_halves_avx512(std::size_t n, const float* in, std::uint16_t* out);
void halves_to_floats_avx512(std::size_t n, const std::uint16_t* in, float* out);
#endif

}  // namespace tqlab::simd
