#include "eval/attention_compare.h"

#include <algorithm>
#include <cmath>

namespace tqlab {
namespace {

// Above this logit error exp(delta) overflows a double; the log-sum-exp form
// takes over (where KL is anything but small, so it loses nothing).
constexpr double kMaxExpDelta = 700.0;
// expm1 where exp(delta) - 1 would cancel; exp beyond.
constexpr double kExpm1Range = 0.5;
// |sum p (e^delta - 1)| up to which log1p is used (beyond it log(sum p e^delta) is as exact).
constexpr double kLog1pRange = 0.5;

}  // namespace

int exact_softmax(int keys, const double* logits, double* p) {
  int argmax = 0;
  for (int j = 1; j < keys; ++j) {
    if (logits[j] > logits[argmax]) argmax = j;
  }
  const double top = logits[argmax];
  double sum = 0;
  for (int j = 0; j < keys; ++j) {
    p[j] = std::exp(logits[j] - top);
    sum += p[j];
  }
  const double inverse = 1.0 / sum;
  for (int j = 0; j < keys; ++j) p[j] *= inverse;
  return argmax;
}

QueryAttentionError compare_query_attention(int keys, const double* logits, const double* p, int exact_argmax,
                                            const double* delta, double* p_tilde) {
  QueryAttentionError error;
  double largest_delta = delta[0];
  double mean_delta = 0, mean_square = 0, weighted_delta = 0;
  for (int j = 0; j < keys; ++j) {
    largest_delta = std::max(largest_delta, delta[j]);
    mean_delta += delta[j];
    mean_square += delta[j] * delta[j];
    weighted_delta += p[j] * delta[j];
  }
  error.ip_bias = mean_delta / keys;
  error.ip_mean_square = mean_square / keys;

  if (largest_delta <= kMaxExpDelta) {
    // w_j = p_j e^{delta_j} > 0 and sum_j w_j, without cancellation; and
    // shift = sum_j p_j (e^{delta_j} - 1), which is accurate when P~ is close to P.
    double shift = 0, total = 0;
    for (int j = 0; j < keys; ++j) {
      double grown, weight;
      if (std::abs(delta[j]) < kExpm1Range) {
        grown = std::expm1(delta[j]);
        weight = p[j] + p[j] * grown;
      } else {
        const double factor = std::exp(delta[j]);
        weight = p[j] * factor;
        grown = factor - 1.0;
      }
      p_tilde[j] = weight;
      total += weight;
      shift += p[j] * grown;
    }
    // log sum_j p_j e^{delta_j}: log1p(shift) near 0, where log(total) would lose
    // the digits of a KL of 1e-12; log(total) otherwise, where 1 + shift may cancel
    // (the keys holding P's mass losing almost all of it).
    const double log_ratio = std::abs(shift) <= kLog1pRange ? std::log1p(shift) : std::log(total);
    error.kl = log_ratio - weighted_delta;
    const double inverse = 1.0 / total;
    for (int j = 0; j < keys; ++j) p_tilde[j] *= inverse;
  } else {
    double top = logits[0] + delta[0];
    for (int j = 1; j < keys; ++j) top = std::max(top, logits[j] + delta[j]);
    double sum = 0;
    for (int j = 0; j < keys; ++j) {
      p_tilde[j] = std::exp(logits[j] + delta[j] - top);
      sum += p_tilde[j];
    }
    // log Z~ - log Z = log sum_j p_j e^{delta_j}, from the two normalizers.
    double exact_top = logits[0];
    for (int j = 1; j < keys; ++j) exact_top = std::max(exact_top, logits[j]);
    double exact_sum = 0;
    for (int j = 0; j < keys; ++j) exact_sum += std::exp(logits[j] - exact_top);
    error.kl = (top + std::log(sum)) - (exact_top + std::log(exact_sum)) - weighted_delta;
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

  double dot = 0, norm_p = 0, norm_q = 0;
  for (int j = 0; j < keys; ++j) {
    dot += p[j] * p_tilde[j];
    norm_p += p[j] * p[j];
    norm_q += p_tilde[j] * p_tilde[j];
  }
  error.cosine = dot / std::sqrt(norm_p * norm_q);
  return error;
}

}  // namespace tqlab
