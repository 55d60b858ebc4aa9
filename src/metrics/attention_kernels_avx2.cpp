// The AVX2 + FMA forms of the attention kernels (attention_kernels_simd.h):
// exp_kernels_wide.inc and attention_compare_fused.inc compiled in a target
// region (core/simd_target.h), every #include before it. Same bits as the
// portable forms (the .inc files say why; tests/attention_compare_test.cpp,
// tests/exp_kernels_test.cpp).
#include "metrics/attention_kernels_simd.h"

#include <algorithm>
#include <cmath>

#include "core/exp_kernels.h"

#if TQLAB_X86_KERNELS
TQLAB_TARGET_AVX2_BEGIN

namespace tqlab::simd {

#define TQLAB_DOUBLES_PER_STEP 4  // one AVX2 register
#include "core/exp_kernels_wide.inc"
#include "metrics/attention_compare_fused.inc"
#undef TQLAB_DOUBLES_PER_STEP

QueryAttentionError compare_query_attention_avx2(int keys, const double* logits, const double* p, int exact_argmax,
                                                 const double* delta, double* p_tilde, double* scratch) {
  return compare_query_attention_fused(keys, logits, p, exact_argmax, delta, p_tilde, scratch);
}

void scale_logit_errors_avx2(int keys, double scale, const float* logit_errors, double* delta) {
  scale_logit_errors_fused(keys, scale, logit_errors, delta);
}

void probability_changes_avx2(int keys, const double* p, const double* p_tilde, float* change, float* kept) {
  probability_changes_fused(keys, p, p_tilde, change, kept);
}

}  // namespace tqlab::simd

TQLAB_TARGET_END
#endif
