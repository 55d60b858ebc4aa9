#include "metrics/attention_compare.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/exp_kernels.h"
#include "core/kernel_set.h"
#include "metrics/attention_kernels_simd.h"

namespace tqlab {
namespace {

using attention_detail::kExpm1Range;
using attention_detail::kLog1pRange;
using attention_detail::kMaxExpDelta;

// Sums in four interleaved lanes, added up pairwise at the end: a fixed order
// (the same bits on every machine and instruction set), and the additions
// overlap instead of waiting on each other.
using Lanes = double __attribute__((vector_size(32)));

double add_lanes(Lanes lanes) { return (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]); }

double sum_of(int n, const double* x) {
  Lanes total = {0, 0, 0, 0};
  int i = 0;
  for (; i + 4 <= n; i += 4) {
    Lanes values;
    std::memcpy(&values, x + i, sizeof values);
    total += values;
  }
  for (; i < n; ++i) total[i % 4] += x[i];
  return add_lanes(total);
}

double dot_of(int n, const double* x, const double* y) {
  Lanes total = {0, 0, 0, 0};
  int i = 0;
  for (; i + 4 <= n; i += 4) {
    Lanes a, b;
    std::memcpy(&a, x + i, sizeof a);
    std::memcpy(&b, y + i, sizeof b);
    total += a * b;
  }
  for (; i < n; ++i) total[i % 4] += x[i] * y[i];
  return add_lanes(total);
}

// w_j = p_j e^{delta_j} > 0 into weights, and p_j (e^{delta_j} - 1) into
// growth: expm1 where e^delta - 1 would cancel, exp beyond; both computed and
// one kept, so the loop has no branch and vectorizes (kept out of line: inlined
// into its caller, GCC 12 sees control flow there and does not vectorize it).
[[gnu::noinline]] void weigh(int keys, const double* p, const double* delta, double* weights, double* growth) {
  for (int j = 0; j < keys; ++j) {
    const double d = delta[j];
    const bool small = std::abs(d) < kExpm1Range;
    const double grown_small = expm1_small(small ? d : 0.0);
    const double factor = exp_kernel(small ? 0.0 : d);
    const double grown_large = factor - 1.0;
    const double weight_small = p[j] + p[j] * grown_small;
    const double weight_large = p[j] * factor;
    weights[j] = small ? weight_small : weight_large;
    growth[j] = p[j] * (small ? grown_small : grown_large);
  }
}

}  // namespace

int exact_softmax(int keys, const double* logits, double* p) {
  int argmax = 0;
  for (int j = 1; j < keys; ++j) {
    if (logits[j] > logits[argmax]) argmax = j;
  }
  const double top = logits[argmax];
  for (int j = 0; j < keys; ++j) p[j] = logits[j] - top;
  exp_array(keys, p, p);
  const double inverse = 1.0 / sum_of(keys, p);
  for (int j = 0; j < keys; ++j) p[j] *= inverse;
  return argmax;
}

QueryAttentionError compare_query_attention_reference(int keys, const double* logits, const double* p, int exact_argmax,
                                                      const double* delta, double* p_tilde, double* scratch) {
  QueryAttentionError error;
  double largest_delta = delta[0];
  for (int j = 1; j < keys; ++j) largest_delta = std::max(largest_delta, delta[j]);
  const double weighted_delta = dot_of(keys, p, delta);
  error.ip_bias = sum_of(keys, delta) / keys;
  error.ip_mean_square = dot_of(keys, delta, delta) / keys;

  if (largest_delta <= kMaxExpDelta) {
    weigh(keys, p, delta, p_tilde, scratch);
    // log sum_j p_j e^{delta_j}: log1p(shift) near 0, where log(total) would lose
    // the digits of a KL of 1e-12; log(total) otherwise, where 1 + shift may cancel
    // (the keys holding P's mass losing almost all of it).
    const double total = sum_of(keys, p_tilde);
    const double shift = sum_of(keys, scratch);
    const double log_ratio = std::abs(shift) <= kLog1pRange ? std::log1p(shift) : std::log(total);
    error.kl = log_ratio - weighted_delta;
    const double inverse = 1.0 / total;
    for (int j = 0; j < keys; ++j) p_tilde[j] *= inverse;
  } else {
    // Logit errors beyond e^700: the log-sum-exp of the quantized logits.
    for (int j = 0; j < keys; ++j) scratch[j] = logits[j] + delta[j];
    const double top = *std::max_element(scratch, scratch + keys);
    for (int j = 0; j < keys; ++j) p_tilde[j] = scratch[j] - top;
    exp_array(keys, p_tilde, p_tilde);
    const double sum = sum_of(keys, p_tilde);
    // log Z~ - log Z = log sum_j p_j e^{delta_j}, from the two normalizers.
    const double exact_top = *std::max_element(logits, logits + keys);
    for (int j = 0; j < keys; ++j) scratch[j] = logits[j] - exact_top;
    exp_array(keys, scratch, scratch);
    error.kl = (top + std::log(sum)) - (exact_top + std::log(sum_of(keys, scratch))) - weighted_delta;
    const double inverse = 1.0 / sum;
    for (int j = 0; j < keys; ++j) p_tilde[j] *= inverse;
  }
  error.kl = std::max(error.kl, 0.0);  // rounding may leave -1e-17 where P == P~

  // Arg-max of the quantized logits, and the rank there of the exact arg-max.
  const double exact_best = logits[exact_argmax] + delta[exact_argmax];
  int quantized_argmax = 0;
  double quantized_best = logits[0] + delta[0];
  int rank = 0;
  for (int j = 0; j < keys; ++j) {
    const double value = logits[j] + delta[j];
    if (value > quantized_best) {
      quantized_best = value;
      quantized_argmax = j;
    }
    rank += value > exact_best || (value == exact_best && j < exact_argmax);
  }
  error.top1 = quantized_argmax == exact_argmax;
  error.top5 = rank < 5;
  error.cosine = dot_of(keys, p, p_tilde) / std::sqrt(dot_of(keys, p, p) * dot_of(keys, p_tilde, p_tilde));
  return error;
}

// The portable form.
#define TQLAB_DOUBLES_PER_STEP 8  // four SSE2 registers (measured faster than 4 per step)
#include "core/exp_kernels_wide.inc"
#include "metrics/attention_compare_fused.inc"
#undef TQLAB_DOUBLES_PER_STEP

QueryAttentionError compare_query_attention(int keys, const double* logits, const double* p, int exact_argmax,
                                            const double* delta, double* p_tilde, double* scratch) {
#if TQLAB_X86_KERNELS
  switch (active_kernel_set()) {
    case KernelSet::avx512:
      return simd::compare_query_attention_avx512(keys, logits, p, exact_argmax, delta, p_tilde, scratch);
    case KernelSet::avx2:
      return simd::compare_query_attention_avx2(keys, logits, p, exact_argmax, delta, p_tilde, scratch);
    case KernelSet::portable:
      break;
  }
#endif
  return compare_query_attention_fused(keys, logits, p, exact_argmax, delta, p_tilde, scratch);
}

void scale_logit_errors(int keys, double scale, const float* logit_errors, double* delta) {
#if TQLAB_X86_KERNELS
  switch (active_kernel_set()) {
    case KernelSet::avx512:
      return simd::scale_logit_errors_avx512(keys, scale, logit_errors, delta);
    case KernelSet::avx2:
      return simd::scale_logit_errors_avx2(keys, scale, logit_errors, delta);
    case KernelSet::portable:
      break;
  }
#endif
  scale_logit_errors_fused(keys, scale, logit_errors, delta);
}

void probability_changes(int keys, const double* p, const double* p_tilde, float* change, float* kept) {
#if TQLAB_X86_KERNELS
  switch (active_kernel_set()) {
    case KernelSet::avx512:
      return simd::probability_changes_avx512(keys, p, p_tilde, change, kept);
    case KernelSet::avx2:
      return simd::probability_changes_avx2(keys, p, p_tilde, change, kept);
    case KernelSet::portable:
      break;
  }
#endif
  probability_changes_fused(keys, p, p_tilde, change, kept);
}

}  // namespace tqlab
