// exp_array for AVX512 (exp_kernels_simd.h): exp_kernels_wide.inc compiled in a
// target region (core/simd_target.h), every #include before it.
#include "core/exp_kernels_simd.h"

#include "core/exp_kernels.h"

#if TQLAB_X86_KERNELS
TQLAB_TARGET_AVX512_BEGIN

namespace tqlab::simd {

#define TQLAB_DOUBLES_PER_STEP 8
#include "core/exp_kernels_wide.inc"
#undef TQLAB_DOUBLES_PER_STEP

void exp_array_avx512(int n, const double* x, double* out) { exp_array_wide(n, x, out); }

}  // namespace tqlab::simd

TQLAB_TARGET_END
#endif
