// The instruction-set forms of the attention metrics' per-key arithmetic:
// compare_query_attention and the conversions around it (attention_compare.h;
// attention_compare_fused.inc, on core/exp_kernels_wide.inc's vectors),
// internal to attention_compare.cpp, which calls the one core/kernel_set.h
// chooses. Each gives the bits of the portable definition.
//   *_avx2    AVX2 + FMA   (attention_kernels_avx2.cpp)
//   *_avx512  AVX-512      (attention_kernels_avx512.cpp)
#pragma once

#include "core/simd_target.h"
#include "metrics/attention_compare.h"

namespace tqlab {
namespace attention_detail {

// Above this logit error exp(delta) overflows a double; the log-sum-exp form
// takes over (where KL is anything but small, so it loses nothing).
inline constexpr double kMaxExpDelta = 700.0;
// expm1 where exp(delta) - 1 would cancel; exp beyond.
inline constexpr double kExpm1Range = 0.5;
// |sum p (e^delta - 1)| up to which log1p is used (beyond it log(sum p e^delta)
// is as exact).
inline constexpr double kLog1pRange = 0.5;

}  // namespace attention_detail

namespace simd {
#if TQLAB_X86_KERNELS
QueryAttentionError compare_query_attention_avx2(int keys, const double* logits, const double* p, int exact_argmax,
                                                 const double* delta, double* p_tilde, double* scratch);
QueryAttentionError compare_query_attention_avx512(int keys, const double* logits, const double* p, int exact_argmax,
                                                   const double* delta, double* p_tilde, double* scratch);
void scale_logit_errors_avx2(int keys, double scale, const float* logit_errors, double* delta);
void scale_logit_errors_avx512(int keys, double scale, const float* logit_errors, double* delta);
void probability_changes_avx2(int keys, const double* p, const double* p_tilde, float* change, float* kept);
void probability_changes_avx512(int keys, const double* p, const double* p_tilde, float* change, float* kept);
#endif
}  // namespace simd
}  // namespace tqlab
