// The instruction-set forms of exp_array (exp_kernels.h), each
// exp_kernels_wide.inc compiled in a target region (core/simd_target.h), with
// the bits of the portable loop; internal to exp_kernels.cpp, which calls the
// one core/kernel_set.h chooses.
//   exp_array_avx2    AVX2    (exp_kernels_avx2.cpp, four doubles a step)
//   exp_array_avx512  AVX-512 (exp_kernels_avx512.cpp, eight doubles a step)
#pragma once

#include "core/simd_target.h"

namespace tqlab::simd {
#if TQLAB_X86_KERNELS
void exp_array_avx2(int n, const double* x, double* out);
void exp_array_avx512(int n, const double* x, double* out);
#endif
}  // namespace tqlab::simd
